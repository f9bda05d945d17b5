// The CPU's fast paths for a single contiguous sequence (host only: a GPU thread would keep their
// buffers in slow local memory). A running sum is bound by its one loop-carried add, so these
// break that dependency: short windows sum each output directly, longer ones run four
// interleaved running sums, held in one vector register, over chunks of steps.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_CPU_FAST_PATHS_H_
#define CAUSAL_MOVING_AVG_CC_CORE_CPU_FAST_PATHS_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cc/core/history.h"
#include "cc/core/numerics.h"
#include "cc/core/types.h"

#if !defined(__CUDA_ARCH__)

namespace causal_moving_avg {

// Steps per chunk of the passes below: their buffers stay in L1.
constexpr int64_t kCpuChunkSteps = 256;

// Four float64 accumulators in one vector (GCC/Clang vector extension; split into halves
// without AVX).
typedef double Float64x4 __attribute__((vector_size(32)));

// Adds (d[k] + d[k + 1]) + (d[k + 2] + d[k + 3]) to lane k of *s, k = 0..3: the next step of
// each interleaved sum. (By pointer: a returned 32-byte vector would warn about the ABI.)
inline void AddWindows4(const double* d, Float64x4* s) {
  Float64x4 d0, d1, d2, d3;
  std::memcpy(&d0, d, sizeof d0);
  std::memcpy(&d1, d + 1, sizeof d1);
  std::memcpy(&d2, d + 2, sizeof d2);
  std::memcpy(&d3, d + 3, sizeof d3);
  *s += (d0 + d1) + (d2 + d3);
}

// Up to this window, a single sequence sums each output's window directly.
constexpr int64_t kShortWindowMax = 4;

template <int64_t kWindow, typename T, typename Acc>
inline void ShortWindowMeansFixed(const T* __restrict__ x, T* __restrict__ y, int64_t t0,
                                  int64_t t1, Acc inv_window) {
  // Converts each input once into a small buffer (not W times), then sums shifted loads of it:
  // both loops vectorise whole.
  Acc converted[kCpuChunkSteps + kWindow - 1];
  for (int64_t t = t0; t < t1; t += kCpuChunkSteps) {
    const int64_t n = Min64(kCpuChunkSteps, t1 - t);
    const T* first = x + t - (kWindow - 1);
    for (int64_t k = 0; k < n + kWindow - 1; ++k) converted[k] = static_cast<Acc>(first[k]);
    for (int64_t k = 0; k < n; ++k) {
      Acc sum = converted[k + kWindow - 1];
      for (int64_t j = 1; j < kWindow; ++j) sum += converted[k + kWindow - 1 - j];
      y[t + k] = RoundTo<T>(sum * inv_window);
    }
  }
}

// Means of a contiguous sequence over steps [t0, t1), all with a full window (t0 >= W), for
// W <= kShortWindowMax.
template <typename T, typename Acc>
inline void ShortWindowMeans(const T* __restrict__ x, T* __restrict__ y, int64_t t0, int64_t t1,
                             int64_t window, Acc inv_window) {
  switch (window) {
    case 1:
      return ShortWindowMeansFixed<1>(x, y, t0, t1, inv_window);
    case 2:
      return ShortWindowMeansFixed<2>(x, y, t0, t1, inv_window);
    case 3:
      return ShortWindowMeansFixed<3>(x, y, t0, t1, inv_window);
    default:
      return ShortWindowMeansFixed<4>(x, y, t0, t1, inv_window);
  }
}

// A single sequence from step t (whose window sum so far, S(t - 1), is *sum) to as close to t1 as
// whole chunks go; returns where it stopped and leaves S of the step before in *sum. Each chunk
// takes two vectorised passes: the differences d(s) = x[s] - x[s - W] (x is 0 before the start)
// into a small buffer, then the window sums S(s) = S(s - 4) + d(s - 3) + d(s - 2) + d(s - 1) + d(s)
// (four interleaved running sums: the recurrence's distance, 4, spans a whole vector) with the
// scaled outputs (a third pass while the divisor still grows, or for strided sequences). The
// regrouping changes only rounding far below the input type's (Sum::kRegroupable).
template <typename T, typename Acc>
int64_t InterleavedChunks(const T* __restrict__ x, T* __restrict__ y, int64_t stride, int64_t t,
                          int64_t t1, const InverseDivisors<Acc>& divisors, Acc* sum) {
  static_assert(std::is_same_v<Acc, double>, "the regroupable sums (PlainSum) are float64");
  constexpr int64_t kChunk = kCpuChunkSteps;
  if (t + kChunk > t1) return t;
  // Inputs leave the window from step `reach` on; a window longer than the sequence never drops
  // any (and must not overflow the index arithmetic).
  const int64_t reach = Min64(LaneHistory{divisors.window}.FirstLeaving(), t1);
  Acc d[kChunk + 3];     // d[k + 3] = d(t + k)
  Acc sums[kChunk + 4];  // sums[k + 4] = S(t + k)
  // What the first chunk reads before t: each of the four interleaved sums starts from S(t - 1)
  // with no difference before t, so no input outside the window is read (one that has left it
  // may be a NaN that the window's sum no longer holds).
  for (int64_t k = 0; k < 4; ++k) sums[k] = *sum;
  for (int64_t k = 0; k < 3; ++k) d[k] = Acc(0);
  for (; t + kChunk <= t1; t += kChunk) {
    // Steps [t, t + filling) are before the window is full: nothing leaves it yet.
    const int64_t filling = Min64(kChunk, Max64(0, reach - t));
    const T* xt = x + t * stride;
    // The inputs leaving at steps t + filling onwards (formed only when there are any).
    const T* xo = filling < kChunk ? x + (t + filling - reach) * stride : x;
    if (stride == 1) {  // contiguous: lets the compiler convert and subtract whole registers
      for (int64_t k = 0; k < filling; ++k) d[k + 3] = static_cast<Acc>(xt[k]);
      for (int64_t k = filling; k < kChunk; ++k)
        d[k + 3] = static_cast<Acc>(xt[k]) - static_cast<Acc>(xo[k - filling]);
    } else {
      for (int64_t k = 0; k < filling; ++k) d[k + 3] = static_cast<Acc>(xt[k * stride]);
      for (int64_t k = filling; k < kChunk; ++k) {
        d[k + 3] = static_cast<Acc>(xt[k * stride]) - static_cast<Acc>(xo[(k - filling) * stride]);
      }
    }
    T* yt = y + t * stride;
    // Steps whose divisor still grows come first (an int32 count, so the loops vectorise).
    const int32_t growing = static_cast<int32_t>(divisors.GrowingSteps(t, kChunk));
    const Acc inv_window = divisors.inv_window;
    // The four sums stay in one register across the chunk: written as the array recurrence, each
    // step would wait for the previous step's store to come back from memory.
    Float64x4 s;
    std::memcpy(&s, sums, sizeof s);
    if (growing == 0 && stride == 1) {  // the steady state: outputs straight from the register
      for (int64_t k = 0; k < kChunk; k += 4) {
        AddWindows4(d + k, &s);
        const Float64x4 means = s * inv_window;
        for (int64_t i = 0; i < 4; ++i) yt[k + i] = RoundTo<T>(means[i]);
      }
      std::memcpy(sums + kChunk, &s, sizeof s);
    } else {
      for (int64_t k = 0; k < kChunk; k += 4) {
        AddWindows4(d + k, &s);
        std::memcpy(sums + k + 4, &s, sizeof s);
      }
      Acc buffer[kChunk];
      const Acc* growing_inv =
          growing > 0 ? divisors.GrowingReciprocals(t, growing, buffer) : buffer;
      if (stride == 1) {
        for (int32_t k = 0; k < growing; ++k) yt[k] = RoundTo<T>(sums[k + 4] * growing_inv[k]);
        for (int64_t k = growing; k < kChunk; ++k) yt[k] = RoundTo<T>(sums[k + 4] * inv_window);
      } else {
        for (int32_t k = 0; k < growing; ++k) {
          yt[k * stride] = RoundTo<T>(sums[k + 4] * growing_inv[k]);
        }
        for (int64_t k = growing; k < kChunk; ++k) {
          yt[k * stride] = RoundTo<T>(sums[k + 4] * inv_window);
        }
      }
    }
    for (int64_t j = 0; j < 4; ++j) sums[j] = sums[kChunk + j];
    for (int64_t j = 0; j < 3; ++j) d[j] = d[kChunk + j];
  }
  *sum = sums[3];
  return t;
}

}  // namespace causal_moving_avg

#endif  // !defined(__CUDA_ARCH__)

#endif  // CAUSAL_MOVING_AVG_CC_CORE_CPU_FAST_PATHS_H_
