// The CPU's direct sums of short windows, for one sequence, several lanes side by side, and one
// lane of packed sequences (host only: a GPU thread would keep their buffers in slow local
// memory). Each output sums its window's inputs, so no addition waits on the one before it.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_CPU_FAST_PATHS_H_
#define CAUSAL_MOVING_AVG_CC_CORE_CPU_FAST_PATHS_H_

#include <cstdint>
#include <cstring>
#include <limits>

#include "cc/core/call.h"
#include "cc/core/history.h"
#include "cc/core/numerics.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// Up to this window, outputs may sum their windows directly (DirectSumsFor): W additions per
// output cost less than the split windows' work per block (split_windows.h).
constexpr int64_t kShortWindowMax = 16;

// The first step s in [t, steps) (t >= 1) where a sequence starts (SequenceIds::StartsAt's rule:
// its id differs from the step before's), or steps. A start close to t is found step by step;
// further on, chunks of 64 steps are checked by an OR of the ids' differences (a loop the
// compiler vectorises without widening), and only the chunk holding the start is searched.
template <typename Id>
inline int64_t NextStart(const Id* ids, int64_t t, int64_t steps) {
  for (const int64_t near = Min64(steps, t + 8); t < near; ++t) {
    if (ids[t] != ids[t - 1]) return t;
  }
  for (; t + 64 <= steps; t += 64) {
    Id differ = 0;
    for (int64_t k = 0; k < 64; ++k) differ |= ids[t + k] ^ ids[t + k - 1];
    if (differ != 0) break;
  }
  for (; t < steps; ++t) {
    if (ids[t] != ids[t - 1]) return t;
  }
  return steps;
}

}  // namespace causal_moving_avg

#if !defined(__CUDA_ARCH__)

namespace causal_moving_avg {

// Steps per chunk of the passes below: their buffers stay in L1.
constexpr int64_t kCpuChunkSteps = 256;

// Four float64 values in one vector (GCC/Clang vector extension; split into halves without AVX).
typedef double Float64x4 __attribute__((vector_size(32)));

// Four inputs as float64. (By pointer: a returned 32-byte vector would warn about the ABI.)
template <typename T>
inline void Load4(const T* x, Float64x4* v) {
  *v = Float64x4{static_cast<double>(x[0]), static_cast<double>(x[1]), static_cast<double>(x[2]),
                 static_cast<double>(x[3])};
}

// Four means rounded to T (by pointer, as Load4): RoundTo's bits. float and float64 in vector
// operations (RoundTo's select per element would be compiled as four branches).
typedef float Float32x4 __attribute__((vector_size(16)));
typedef int32_t Int32x4 __attribute__((vector_size(16)));
typedef int64_t Int64x4 __attribute__((vector_size(32)));
template <typename Bits, typename Vector, typename F>
inline void StorePositiveNaNs(const Vector& rounded, F* y) {
  const F nan = std::numeric_limits<F>::quiet_NaN();
  const Vector nans = {nan, nan, nan, nan};
  const Bits is_number = rounded == rounded;
  Bits bits, nan_bits;
  std::memcpy(&bits, &rounded, sizeof bits);
  std::memcpy(&nan_bits, &nans, sizeof nan_bits);
  bits = (bits & is_number) | (nan_bits & ~is_number);
  std::memcpy(y, &bits, sizeof bits);
}
inline void Narrow4(const Float64x4* v, float* y) {
  const Float32x4 rounded = __builtin_convertvector(*v, Float32x4);
  StorePositiveNaNs<Int32x4>(rounded, y);
}
inline void Narrow4(const Float64x4* v, double* y) { StorePositiveNaNs<Int64x4>(*v, y); }
template <typename T>
inline void Narrow4(const Float64x4* v, T* y) {
  for (int i = 0; i < 4; ++i) y[i] = RoundTo<T>((*v)[i]);
}

// Most lanes that direct sums advance side by side (it sizes ShortWindowMeansFixed's buffer).
constexpr int64_t kDirectLanesMax = 16;

// Means over the positions [i0, i1) of a contiguous array whose window terms lie `lag` positions
// apart (1: the steps of one sequence; L: L lanes side by side, so a position's terms are its
// lane's earlier steps), every window full (i0 >= (W - 1) lag): kWindow = W terms summed newest
// first, each lane's additions those of the lane alone. kLag > 0 fixes the lag.
template <int64_t kWindow, int64_t kLag, typename T, typename Acc>
inline void ShortWindowMeansFixed(const T* __restrict__ x, T* __restrict__ y, int64_t i0,
                                  int64_t i1, int64_t lag, Acc inv_window) {
  if constexpr (kLag > 0) lag = kLag;
  // Converts each input once into a small buffer (not W times), then sums shifted loads of it:
  // both loops vectorise whole.
  Acc converted[kCpuChunkSteps + (kWindow - 1) * (kLag > 0 ? kLag : kDirectLanesMax)];
  const int64_t reach = (kWindow - 1) * lag;
  for (int64_t i = i0; i < i1; i += kCpuChunkSteps) {
    const int64_t n = Min64(kCpuChunkSteps, i1 - i);
    const T* first = x + i - reach;
    for (int64_t k = 0; k < n + reach; ++k) converted[k] = static_cast<Acc>(first[k]);
    for (int64_t k = 0; k < n; ++k) {
      Acc sum = converted[k + reach];
      for (int64_t j = 1; j < kWindow; ++j) sum += converted[k + reach - j * lag];
      y[i + k] = RoundTo<T>(sum * inv_window);
    }
  }
}

template <int64_t kWindow, int64_t kLag, typename T, typename Acc>
inline void ShortWindowMeansUpTo(const T* __restrict__ x, T* __restrict__ y, int64_t i0, int64_t i1,
                                 int64_t lag, int64_t window, Acc inv_window) {
  if constexpr (kWindow > 1) {
    if (window < kWindow)
      return ShortWindowMeansUpTo<kWindow - 1, kLag>(x, y, i0, i1, lag, window, inv_window);
  }
  ShortWindowMeansFixed<kWindow, kLag>(x, y, i0, i1, lag, inv_window);
}

// Means of steps [t0, t1) of `lanes` contiguous lanes (consecutive steps `lanes` apart; at most
// kDirectLanesMax), all with a full window (t0 >= W), for W <= kShortWindowMax.
template <typename T, typename Acc>
inline void ShortWindowMeans(const T* __restrict__ x, T* __restrict__ y, int64_t t0, int64_t t1,
                             int64_t window, Acc inv_window, int64_t lanes = 1) {
  if (lanes == 1)
    return ShortWindowMeansUpTo<kShortWindowMax, 1>(x, y, t0, t1, 1, window, inv_window);
  ShortWindowMeansUpTo<kShortWindowMax, 0>(x, y, t0 * lanes, t1 * lanes, lanes, window, inv_window);
}

// The end of the steps in [t0, t1) that direct sums take one by one: those before the window is
// full or whose divisor still grows (all of them when the summed window Wc < W).
inline int64_t DirectFillingEnd(int64_t t0, int64_t t1, int64_t summed,
                                const InverseDivisors<double>& divisors) {
  const int64_t window = divisors.window;
  return Min64(t1, summed < window ? t1 : Max64(window, t0 + divisors.GrowingSteps(t0, t1 - t0)));
}

// Means of `lanes` contiguous lanes (consecutive steps `lanes` apart; at most kDirectLanesMax)
// over steps [t0, t1) by direct sums, for a summed window Wc = min(W, steps) <= kShortWindowMax:
// the steps before the window is full one by one, then ShortWindowMeans. Each lane's additions are
// those of the lane alone, so a lane of a wider call has the bits of the same series alone.
template <typename T>
inline void DirectMeans(const T* __restrict__ x, T* __restrict__ y, int64_t t0, int64_t t1,
                        int64_t summed, const InverseDivisors<double>& divisors,
                        int64_t lanes = 1) {
  const int64_t window = divisors.window;
  const LaneHistory history{summed};
  const int64_t filling_end = DirectFillingEnd(t0, t1, summed, divisors);
  int64_t t = t0;
  for (; t < filling_end; ++t) {
    for (int64_t l = 0; l < lanes; ++l) {
      double sum = 0.0;
      for (int64_t j = t; j >= history.WindowBegin(t); --j)
        sum += static_cast<double>(x[j * lanes + l]);
      y[t * lanes + l] = RoundTo<T>(sum * divisors.At(t));
    }
  }
  if (t < t1) ShortWindowMeans(x, y, t, t1, window, divisors.inv_window, lanes);
}

// Whether a unit of `lanes` contiguous lanes sums its windows (Wc = `summed`) directly rather than
// by split windows: Wc additions per output against the split windows' constant work per block.
// Split windows hold 4 or 8 lanes' sums in vector registers and take 16 lanes at a time, where
// they win from a few terms on (placed by measuring Wc 3-16); other lane counts run their loop per
// lane, which direct sums beat for short windows on the lane counts measured (2, 3, 5, 6, 12).
inline bool DirectSumsFor(int64_t lanes, int64_t summed) {
  if (lanes > kDirectLanesMax || summed > kShortWindowMax) return false;
  if (lanes == 4) return summed <= 9;
  if (lanes == 8 || lanes == 16) return summed <= 6;
  return true;
}

// DirectMeans of every sequence of a one-lane row with ids in one pass over steps [begin, end)
// (`begin` starts a sequence, `end` starts one or ends the row), so short sequences cost no set-up
// each: the same bits as DirectMeans on each sequence alone. `summed` is how many inputs a window
// holds at most: W <= kShortWindowMax, or kShortWindowMax under a longer W where no sequence of
// the range is longer (each window then holds its sequence's inputs from its start). `divisors`
// are a fresh start's (a call with ids is never a stream), so divisors.At(k) is what a sequence's
// step k divides by.
//
// Two ways, chosen per piece of kPiece steps by how many sequences start in it:
// - long sequences (summed == W): the piece's outputs (past `begin`'s first W) by ShortWindowMeans
//   (windows that cross a start too), then each sequence's first W steps in the piece summed again
//   from its start (`fill`), overwriting those;
// - short ones, in masked chunks: each window summed newest input first, four steps at a time,
//   its terms from before the sequence's start replaced by -0.0 (which leaves a sum unchanged).
// A window that reaches back to its start gets +0.0 added last, as DirectMeans starts those sums
// from +0.0 (the only difference: the sign of an all-zero sum).
template <typename T, typename Id>
inline void PackedDirectMeans(const T* __restrict__ x, T* __restrict__ y,
                              const Id* __restrict__ ids, int64_t begin, int64_t end,
                              int64_t summed, const InverseDivisors<double>& divisors) {
  constexpr int64_t kChunk = 64, kLead = kShortWindowMax - 1;
  alignas(32) double inverse[kShortWindowMax];  // what a sequence's step k divides by, once a call
  for (int64_t k = 0; k < kShortWindowMax; ++k) inverse[k] = divisors.At(k);
  const Float64x4 negative_zero = {-0.0, -0.0, -0.0, -0.0};
  const Float64x4 positive_zero = {0.0, 0.0, 0.0, 0.0};
  // A masked chunk's steps t - (summed - 1) ... t + n - 1: inputs as float64, and -1 where a
  // sequence starts (at `begin` and before it: nothing before `begin` is summed).
  alignas(32) double converted[kLead + kChunk + 3];
  alignas(32) int64_t starts[kLead + kChunk + 3];
  const Int64x4 sign = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN};
  const auto masked_chunk = [&](int64_t t, int64_t n, auto partial) {
    const int64_t first = t - (summed - 1);
    const int64_t lead = Min64(n + summed - 1, Max64(0, begin + 1 - first));
    for (int64_t i = 0; i < lead; ++i) {
      converted[i] = first + i == begin ? static_cast<double>(x[begin]) : 0.0;
      starts[i] = -1;
    }
    for (int64_t i = lead; i < n + summed - 1; ++i) {
      converted[i] = static_cast<double>(x[first + i]);
      starts[i] = -static_cast<int64_t>(ids[first + i] != ids[first + i - 1]);
    }
    for (int64_t i = n + summed - 1; i < n + summed + 2; ++i) {
      converted[i] = 0.0;
      starts[i] = -1;
    }
    for (int64_t k = 0; k < n; k += 4) {
      const double* newest = converted + k + summed - 1;
      const int64_t* cut = starts + k + summed - 1;
      Float64x4 sum, term;
      Int64x4 alive, start, count = {1, 1, 1, 1};
      std::memcpy(&sum, newest, sizeof sum);
      std::memcpy(&start, cut, sizeof start);
      alive = ~start;  // the window still holds its sequence's inputs
      for (int64_t j = 1; j < summed; ++j) {
        std::memcpy(&term, newest - j, sizeof term);
        sum += alive != 0 ? term : negative_zero;
        if constexpr (decltype(partial)::value) count -= alive;
        std::memcpy(&start, cut - j, sizeof start);
        alive &= ~start;
      }
      sum += reinterpret_cast<Float64x4>(sign & alive);  // +0.0 where the window reached a start
      if constexpr (decltype(partial)::value) {
        Float64x4 inv;
        for (int i = 0; i < 4; ++i) inv[i] = inverse[count[i] - 1];
        sum *= inv;
      } else {
        sum *= divisors.inv_window;
      }
      if (k + 4 <= n) {
        Narrow4(&sum, y + t + k);
      } else {
        for (int64_t i = 0; i < n - k; ++i) y[t + k + i] = RoundTo<T>(sum[i]);
      }
    }
  };
  const auto masked_range = [&](int64_t from, int64_t to) {
    for (int64_t t = from; t < to; t += kChunk) {
      if (divisors.edge == Edge::kPartial) {
        masked_chunk(t, Min64(kChunk, to - t), std::true_type{});
      } else {
        masked_chunk(t, Min64(kChunk, to - t), std::false_type{});
      }
    }
  };
  if (summed < divisors.window) return masked_range(begin, end);  // no window free of a start
  // Steps [from, min(to, s + summed)) of the sequence that starts at s, each summed from s newest
  // input first: four steps per vector where the loads (3 steps before s to 3 after the last
  // step) stay inside the row and before `end` (terms before s replaced by -0.0, +0.0 added last,
  // as in masked_chunk), else one by one as DirectMeans does.
  const Int64x4 lane = {0, 1, 2, 3};
  const auto fill = [&](int64_t s, int64_t from, int64_t to) {
    const int64_t stop = Min64(to, s + summed);
    if (from == s && s >= 3) {
      for (int64_t k0 = 0; s + k0 < stop && s + k0 + 4 <= end; k0 += 4) {
        Float64x4 sum, term = positive_zero, inv;  // (initialised: GCC's warning on Load4)
        Load4(x + s + k0, &sum);
        for (int64_t j = 1; j <= k0 + 3; ++j) {
          Load4(x + s + k0 - j, &term);
          sum += lane + k0 >= j ? term : negative_zero;
        }
        sum += positive_zero;
        std::memcpy(&inv, inverse + k0, sizeof inv);
        sum *= inv;
        const int64_t count = Min64(4, stop - (s + k0));
        if (count == 4) {
          Narrow4(&sum, y + s + k0);
        } else {
          for (int64_t i = 0; i < count; ++i) y[s + k0 + i] = RoundTo<T>(sum[i]);
        }
        from = s + k0 + count;
      }
    }
    for (int64_t t = from; t < stop; ++t) {
      double sum = 0.0;
      for (int64_t j = t; j >= s; --j) sum += static_cast<double>(x[j]);
      y[t] = RoundTo<T>(sum * inverse[t - s]);
    }
  };
  // Pieces stay in L1 between their passes; their starts are read into bit masks (32 steps a
  // word: a loop the compiler vectorises without widening).
  constexpr int64_t kPiece = 1024;
  constexpr int64_t kLongSequenceSteps = 24;  // below this mean length, masked chunks cost less
  uint32_t start_bits[kPiece / 32];
  for (int64_t p = begin; p < end; p += kPiece) {
    const int64_t q = Min64(end, p + kPiece), n = q - p, words = (n + 31) / 32;
    // The hardware's prefetch stops at page boundaries, about a piece of float32 steps.
    const int64_t ahead = Min64(end, q + kPiece);
    for (int64_t k = q; k < ahead; k += 64 / sizeof(Id)) __builtin_prefetch(ids + k);
    for (int64_t k = q; k < ahead; k += 64 / sizeof(T)) __builtin_prefetch(x + k);
    int64_t starts_in_piece = 0;
    for (int64_t w = 0; w < words; ++w) {
      const Id* id = ids + p + 32 * w;
      uint32_t mask = 0;
      if (32 * w + 32 <= n && (p > begin || w > 0)) {
        for (int k = 0; k < 32; ++k) mask |= static_cast<uint32_t>(id[k] != id[k - 1]) << k;
      } else {
        for (int64_t k = 0; k < 32 && p + 32 * w + k < q; ++k) {
          if (p + 32 * w + k > begin && id[k] != id[k - 1]) mask |= uint32_t{1} << k;
        }
      }
      start_bits[w] = mask;
      starts_in_piece += __builtin_popcount(mask);
    }
    if (starts_in_piece * kLongSequenceSteps > n) {
      masked_range(p, q);
      continue;
    }
    const int64_t full = Max64(p, begin + summed);
    if (full < q) ShortWindowMeans(x, y, full, q, summed, divisors.inv_window);
    // The last start before p, if its first W steps reach p: those from p on (a start at p is
    // filled after it, overwriting them).
    int64_t carried = Max64(begin, p - summed);
    for (int64_t t = p - 1; t > carried; --t) {
      if (ids[t] != ids[t - 1]) {
        carried = t;
        break;
      }
    }
    fill(carried, p, q);
    for (int64_t w = 0; w < words; ++w) {
      for (uint32_t mask = start_bits[w]; mask != 0; mask &= mask - 1) {
        const int64_t s = p + 32 * w + __builtin_ctz(mask);
        fill(s, s, q);
      }
    }
  }
}

// The end of one lane's run of sequences of at most kShortWindowMax steps from `begin` (a start):
// the start of the first longer sequence, or the first start at or after `to`, or `steps`.
template <typename Id>
inline int64_t ShortSequencesEnd(const Id* ids, int64_t begin, int64_t to, int64_t steps) {
  int64_t length = 1;  // steps so far of the sequence holding step t
  int64_t t = begin + 1;
  for (; t < to; ++t) {  // no branch on a start: they come at random
    length = ids[t] != ids[t - 1] ? 1 : length + 1;
    if (length > kShortWindowMax) return t - kShortWindowMax;
  }
  for (; t < steps; ++t) {  // the last sequence that starts before `to`
    if (ids[t] != ids[t - 1]) return t;
    if (++length > kShortWindowMax) return t - kShortWindowMax;
  }
  return steps;
}

// A stream's head (stream.h, x's first n = min(W - 1, steps) steps) summed straight from its
// state and x, rows [row0, row1): each output's window newest input first, as DirectMeans sums
// it, so where the stage's units would sum directly too, the same bits, without staging.
template <typename T>
inline void StreamHeadMeans(const Call& call, int64_t row0, int64_t row1) {
  const int64_t inner = call.view.inner, steps = call.view.steps, history = call.HistorySteps();
  const int64_t head = Min64(history, steps);
  const auto divisors = DivisorsOf<double>(call);
  constexpr int64_t kPassLanes = 64;  // lanes summed side by side; their sums stay in L1
  for (int64_t row = row0; row < row1; ++row) {
    const T* past = static_cast<const T*>(call.history) + row * history * inner;
    const T* x = static_cast<const T*>(call.x) + row * steps * inner;
    T* y = static_cast<T*>(call.y) + row * steps * inner;
    for (int64_t t = 0; t < head; ++t) {
      const double inv = divisors.At(t);
      for (int64_t l0 = 0; l0 < inner; l0 += kPassLanes) {
        const int64_t lanes = Min64(kPassLanes, inner - l0);
        double sums[kPassLanes];
        for (int64_t l = 0; l < lanes; ++l) sums[l] = static_cast<double>(x[t * inner + l0 + l]);
        for (int64_t j = t - 1; j >= 0; --j) {
          for (int64_t l = 0; l < lanes; ++l) sums[l] += static_cast<double>(x[j * inner + l0 + l]);
        }
        for (int64_t j = history - 1; j >= t; --j) {
          for (int64_t l = 0; l < lanes; ++l) {
            sums[l] += static_cast<double>(past[j * inner + l0 + l]);
          }
        }
        for (int64_t l = 0; l < lanes; ++l) y[t * inner + l0 + l] = RoundTo<T>(sums[l] * inv);
      }
    }
  }
}

}  // namespace causal_moving_avg

#endif  // !defined(__CUDA_ARCH__)

#endif  // CAUSAL_MOVING_AVG_CC_CORE_CPU_FAST_PATHS_H_
