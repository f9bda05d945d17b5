// Window sums that never take a value out again ("split windows"), the CPU's path for every
// dtype. The steps of a unit are cut into blocks of B steps, and the window of step t is split
// into three parts, each summed from its own inputs (in float64 for 16- and 32-bit inputs, in
// compensated float64 for float64 ones):
//
//   the tail of an earlier block a  +  the whole blocks a+1 .. b-1  +  the head of t's block b
//
// The tails of a block (its sums from each step to its end) and the head (the running sum since
// b began) are prefix sums, a whole block is its total, and nothing is ever subtracted. So an
// output's error is that of summing its own window: a value that has left the window leaves no
// trace, a NaN/Inf reaches exactly the outputs whose window holds it, and a constant run is
// exact. The cost stays O(1) per output: each input is read twice (once into a head, once into
// the tails), as a running sum reads it entering and leaving. Host only.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_SPLIT_WINDOWS_H_
#define CAUSAL_MOVING_AVG_CC_CORE_SPLIT_WINDOWS_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cc/core/cpu_fast_paths.h"
#include "cc/core/history.h"
#include "cc/core/numerics.h"
#include "cc/core/plan.h"
#include "cc/core/types.h"

#if !defined(__CUDA_ARCH__)

namespace causal_moving_avg {

// floor(a / b) for b > 0.
inline int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Where the window of each step of a unit begins, in blocks of the unit: block c covers steps
// [t0 + c B, t0 + c B + B) (c < 0 before the unit; steps before the sequence hold zeros).
struct SplitBlocks {
  int64_t t0;
  int64_t block;   // B
  int64_t window;  // the summed window (>= B)

  int64_t FirstStep(int64_t c) const { return t0 + c * block; }
  // How many of block c's first steps lie before the sequence (LaneHistory's start).
  int64_t StepsBefore(int64_t c) const {
    const int64_t first = FirstStep(c);
    return Min64(block, Max64(0, LaneHistory{window}.SequenceStart(first) - first));
  }
  // The block whose tail begins step t's window, and where in it: the window of t is block a
  // from step `offset` on (offset in [1, B]: B takes nothing from a), the blocks after a, and
  // the head of t's block.
  int64_t TailBlock(int64_t t) const { return FloorDiv(t - window - t0, block); }
  int64_t TailOffset(int64_t t) const { return t - window + 1 - t0 - TailBlock(t) * block; }
};

// One lane of values of block c into vals[0, B) as float64, zeros before the sequence.
template <typename T>
inline void LoadBlock(const T* __restrict__ x, const SplitBlocks& blocks, int64_t c,
                      double* __restrict__ vals) {
  const int64_t first = blocks.FirstStep(c);
  const int64_t zeros = blocks.StepsBefore(c);
  for (int64_t k = 0; k < zeros; ++k) vals[k] = 0.0;
  for (int64_t k = zeros; k < blocks.block; ++k) vals[k] = static_cast<double>(x[first + k]);
}

// Units of four or eight lanes run paths that hold a unit's sums in one or two vector registers
// (named, so that the compiler keeps them there); other units run loops over all their lanes
// per step, which it vectorises better than a chunk of eight beside a remainder.
inline bool InVectorRegisters(int64_t lanes) { return lanes == 4 || lanes == 8; }

// The carry between two scanned vectors and what came before them: u (scanned first) gets the
// carry, v the carry and u's total, and the carry takes both totals (one addition on the carry's
// path per eight steps).
inline void AddCarry(Float64x4 u_total, Float64x4 v_total, Float64x4* u, Float64x4* v,
                     Float64x4* carry) {
  *u += *carry;
  *v += *carry + u_total;
  *carry += u_total + v_total;
}

// Inclusive prefix sums of x[0, n) in float64 into out. Four steps per vector, scanned by two
// shifted additions; two vectors per round, so the carry between rounds costs one addition per
// eight steps. A fixed order of operations: every version of the core gives the same bits.
template <typename T>
inline void PrefixSums(const T* __restrict__ x, int64_t n, double* __restrict__ out) {
  const Float64x4 zero = {0.0, 0.0, 0.0, 0.0};
  Float64x4 carry = zero;
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    Float64x4 u, v;
    Load4(x + k, &u);
    Load4(x + k + 4, &v);
    u += __builtin_shufflevector(u, zero, 4, 0, 1, 2);
    v += __builtin_shufflevector(v, zero, 4, 0, 1, 2);
    u += __builtin_shufflevector(u, zero, 4, 4, 0, 1);
    v += __builtin_shufflevector(v, zero, 4, 4, 0, 1);
    AddCarry(__builtin_shufflevector(u, u, 3, 3, 3, 3), __builtin_shufflevector(v, v, 3, 3, 3, 3),
             &u, &v, &carry);
    std::memcpy(out + k, &u, sizeof u);
    std::memcpy(out + k + 4, &v, sizeof v);
  }
  double running = carry[0];
  for (; k < n; ++k) out[k] = running = running + static_cast<double>(x[k]);
}

// Suffix sums: tails[k] = x[k] + ... + x[n - 1] in float64 for k < n, and tails[n] = 0; as
// PrefixSums, from the end.
template <typename T>
inline void SuffixSums(const T* __restrict__ x, int64_t n, double* __restrict__ tails) {
  const Float64x4 zero = {0.0, 0.0, 0.0, 0.0};
  tails[n] = 0.0;
  int64_t k = n;
  double running = 0.0;
  for (; k % 8 != 0; --k) tails[k - 1] = running = static_cast<double>(x[k - 1]) + running;
  Float64x4 carry = {running, running, running, running};
  for (; k >= 8; k -= 8) {
    Float64x4 u, v;  // u the later four steps
    Load4(x + k - 4, &u);
    Load4(x + k - 8, &v);
    u += __builtin_shufflevector(u, zero, 1, 2, 3, 4);
    v += __builtin_shufflevector(v, zero, 1, 2, 3, 4);
    u += __builtin_shufflevector(u, zero, 2, 3, 4, 4);
    v += __builtin_shufflevector(v, zero, 2, 3, 4, 4);
    AddCarry(__builtin_shufflevector(u, u, 0, 0, 0, 0), __builtin_shufflevector(v, v, 0, 0, 0, 0),
             &u, &v, &carry);
    std::memcpy(tails + k - 4, &u, sizeof u);
    std::memcpy(tails + k - 8, &v, sizeof v);
  }
}

// Where a unit's inputs and outputs are: step t's `lanes` values side by side at In(t) and
// Out(t), consecutive steps `stride` apart. RowLanes: lanes of a row, in place. SpanLanes:
// kSpanLanes spans of one lane (SpanLanes below), staged block by block.
template <typename T>
struct RowLanes {
  static constexpr bool kStaged = false;
  const T* x;
  T* y;
  int64_t stride;
  const T* In(int64_t t) const { return x + t * stride; }
  T* Out(int64_t t) const { return y + t * stride; }
  void Stage(int64_t, int64_t) {}
  void BeginBlock(int64_t, int64_t) {}
  void EndBlock(int64_t, int64_t) {}
};

// kSpanLanes spans of one lane as the lanes of one unit: lane l's step t is x[t + l * distance]
// (y likewise). Their inputs are staged side by side in a ring of `ring_steps` steps (a power of
// two, more than the steps a window and a block reach back), a block's outputs side by side in
// `out` until EndBlock stores them; both stay in cache, where staging whole spans would not.
template <typename T>
struct SpanLanes {
  static constexpr bool kStaged = true;
  static constexpr int64_t stride = kSpanLanes;
  const T* x;
  T* y;
  int64_t distance;
  T* ring;
  int64_t ring_steps;
  T* out;
  int64_t out_first = 0;  // the step of out's first row

  const T* In(int64_t t) const { return ring + (t & (ring_steps - 1)) * kSpanLanes; }
  T* Out(int64_t t) const { return out + (t - out_first) * kSpanLanes; }
  // Steps [t_a, t_b) into the ring; four steps at a time transposed in registers.
  void Stage(int64_t t_a, int64_t t_b) {
    int64_t t = t_a;
    const auto one = [&] {
      T* row = ring + (t & (ring_steps - 1)) * kSpanLanes;
      for (int64_t l = 0; l < kSpanLanes; ++l) row[l] = x[t + l * distance];
    };
    for (; t < t_b && t % 4 != 0; ++t) one();
    for (; t + 4 <= t_b; t += 4) Transpose4(x + t, distance, ring + (t & (ring_steps - 1)) * 4, 4);
    for (; t < t_b; ++t) one();
  }
  // A block's steps [begin, end): its inputs into the ring, its outputs into `out`.
  void BeginBlock(int64_t begin, int64_t end) {
    Stage(begin, end);
    out_first = begin;
  }
  void EndBlock(int64_t begin, int64_t end) {
    int64_t t = begin;
    for (; t + 4 <= end; t += 4) Transpose4(out + (t - begin) * 4, 4, y + t, distance);
    for (; t < end; ++t) {
      for (int64_t l = 0; l < kSpanLanes; ++l) y[t + l * distance] = out[(t - begin) * 4 + l];
    }
  }

 private:
  // from[r * from_row + c] to to[c * to_row + r] for r, c < 4, as bits.
  static void Transpose4(const T* from, int64_t from_row, T* to, int64_t to_row) {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>;
    typedef Bits Bits4 __attribute__((vector_size(4 * sizeof(Bits))));
    Bits4 r[4];
    for (int i = 0; i < 4; ++i) std::memcpy(&r[i], from + i * from_row, sizeof(Bits4));
    const Bits4 a = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5);
    const Bits4 b = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5);
    const Bits4 c = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7);
    const Bits4 d = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7);
    const Bits4 columns[4] = {
        __builtin_shufflevector(a, b, 0, 1, 4, 5), __builtin_shufflevector(a, b, 2, 3, 6, 7),
        __builtin_shufflevector(c, d, 0, 1, 4, 5), __builtin_shufflevector(c, d, 2, 3, 6, 7)};
    for (int i = 0; i < 4; ++i) std::memcpy(to + i * to_row, &columns[i], sizeof(Bits4));
  }
};

// Means of steps [t0, t1) of `lanes` contiguous lanes (consecutive steps `stride` apart), by
// split windows of Sum (SplitSumOf<T>): `divisors` the call's (W among them), `summed` = min(W,
// steps), `layout` the plan's SplitLayoutFor(summed, unit lanes), and `scratch` holds
// layout.ScratchSums(lanes) sums. kMiddle: whether windows hold whole blocks (summed > B).
template <bool kMiddle, typename Sum, typename Steps>
void SplitWindowMeansOf(Steps& steps, int64_t lanes, int64_t t0, int64_t t1, int64_t summed,
                        const InverseDivisors<double>& divisors, const SplitLayout& layout,
                        Sum* __restrict__ scratch) {
  using T = std::remove_const_t<std::remove_pointer_t<decltype(steps.x)>>;
  const int64_t stride = steps.stride;
  const int64_t B = layout.block, R = layout.ring;
  const SplitBlocks blocks{t0, B, summed};
  Sum* tails[2] = {scratch, scratch + (B + 1) * lanes};  // tails of blocks of each parity
  Sum* totals = scratch + 2 * (B + 1) * lanes;           // block c's in slot c mod R
  Sum* head = totals + R * lanes;
  Sum* middle[2] = {head + lanes, head + 2 * lanes};  // the whole blocks after a0, a0 + 1
  const auto slot = [R](int64_t c) { return ((c % R) + R) % R; };
  // A single float64-summed sequence runs vectorised scans over each block (PrefixSums).
  constexpr bool kPlain = std::is_same_v<Sum, PlainSum>;
  const bool one_lane = kPlain && !Steps::kStaged && lanes == 1 && stride == 1;
  const T* __restrict__ x = steps.x;  // (one lane in place only)
  T* __restrict__ y = steps.y;
  double* staged = reinterpret_cast<double*>(head + 3 * lanes);  // one lane: inputs, heads
  const auto as_doubles = [](Sum* sums) { return reinterpret_cast<double*>(sums); };
  // Whether the tails of each parity belong to a block wholly before the sequence: each of them
  // is then the empty sum, Sum(), which the outputs take without reading (a packed sequence no
  // longer than W reads only such blocks). One lane fills them instead: its loops read an array.
  bool empty_tails[2] = {false, false};

  // Block c's tails into tails[c & 1]: row k holds each lane's sum from step k of c on.
  const auto fill_tails = [&](int64_t c) {
    Sum* out = tails[c & 1];
    const int64_t first = blocks.FirstStep(c);
    empty_tails[c & 1] = !one_lane && blocks.StepsBefore(c) == B;
    if (empty_tails[c & 1]) return;
    if constexpr (kPlain) {
      if (one_lane) {
        const int64_t before = blocks.StepsBefore(c);
        if (before == 0) return SuffixSums(x + first, B, as_doubles(out));
        // A block wholly before the sequence: every tail is the +0.0 that summing its zeros
        // gives (a packed sequence no longer than W reads only such blocks).
        if (before == B) return std::fill(as_doubles(out), as_doubles(out) + B + 1, 0.0);
        LoadBlock(x, blocks, c, staged);  // reaches before the sequence: zeros there
        return SuffixSums(staged, B, as_doubles(out));
      }
    }
    const int64_t zeros = blocks.StepsBefore(c);  // rows before the sequence
    for (int64_t l = 0; l < lanes; ++l) out[B * lanes + l] = Sum();
    int64_t l0 = 0;
    if constexpr (kPlain) {
      // Four or eight lanes: their sums in vector registers down the block.
      const auto in_registers = [&](auto pair) {
        constexpr bool kPair = decltype(pair)::value;
        Float64x4 lo = {}, hi = {};
        for (int64_t k = B - 1; k >= zeros; --k) {
          const T* xs = steps.In(first + k);
          double* row = as_doubles(out + k * lanes);
          Float64x4 in;
          Load4(xs, &in);
          lo += in;
          std::memcpy(row, &lo, sizeof lo);
          if constexpr (kPair) {
            Load4(xs + 4, &in);
            hi += in;
            std::memcpy(row + 4, &hi, sizeof hi);
          }
        }
        l0 = lanes;
      };
      if (InVectorRegisters(lanes)) {
        lanes == 8 ? in_registers(std::true_type{}) : in_registers(std::false_type{});
      }
      // Sixteen lanes at a time, their sums in an array the compiler vectorises.
      for (; l0 + 16 <= lanes; l0 += 16) {
        double sums[16] = {};
        for (int64_t k = B - 1; k >= zeros; --k) {
          const T* xs = steps.In(first + k) + l0;
          double* row = as_doubles(out + k * lanes + l0);
          for (int64_t l = 0; l < 16; ++l) {
            sums[l] += static_cast<double>(xs[l]);
            row[l] = sums[l];
          }
        }
      }
    }
    for (int64_t k = B - 1; k >= zeros && l0 < lanes; --k) {
      Sum* row = out + k * lanes;
      const T* xs = steps.In(first + k);
      for (int64_t l = l0; l < lanes; ++l) {
        row[l] = row[lanes + l];
        row[l].Add(static_cast<double>(xs[l]));
      }
    }
    for (int64_t k = zeros - 1; k >= 0; --k) {
      for (int64_t l = 0; l < lanes; ++l) out[k * lanes + l] = out[zeros * lanes + l];
    }
  };
  // The total of a whole block before the unit (the unit's own blocks keep their heads').
  const auto fill_total = [&](int64_t c) {
    Sum* out = totals + slot(c) * lanes;
    for (int64_t l = 0; l < lanes; ++l) out[l] = Sum();
    const int64_t first = blocks.FirstStep(c);
    for (int64_t k = blocks.StepsBefore(c); k < B; ++k) {
      const T* xs = steps.In(first + k);
      for (int64_t l = 0; l < lanes; ++l) out[l].Add(static_cast<double>(xs[l]));
    }
  };

  // What the first block's windows reach before the unit.
  const int64_t first_tail = blocks.TailBlock(t0);
  steps.Stage(Max64(blocks.FirstStep(first_tail), LaneHistory{summed}.SequenceStart(t0)), t0);
  if constexpr (kMiddle) {
    for (int64_t c = first_tail + 1; c < 0; ++c) fill_total(c);
  }
  fill_tails(first_tail);
  int64_t tails_done = first_tail;

  for (int64_t b = 0; blocks.FirstStep(b) < t1; ++b) {
    const int64_t begin = blocks.FirstStep(b), end = Min64(t1, begin + B);
    const int64_t a0 = blocks.TailBlock(begin);
    steps.BeginBlock(begin, end);
    // The first step whose window begins in block a0 + 1 (none in b when W is a multiple of B;
    // else a0 + 1 < b).
    const int64_t switch_at = Min64(end, blocks.FirstStep(a0 + 1) + summed);
    if (switch_at < end && a0 + 1 > tails_done) fill_tails(tails_done = a0 + 1);
    if constexpr (kMiddle) {
      // The whole blocks after a0 + 1, then after a0 (this order for every block and lane).
      for (int64_t l = 0; l < lanes; ++l) middle[1][l] = Sum();
      for (int64_t c = a0 + 2; c < b; ++c) {
        const Sum* total = totals + slot(c) * lanes;
        for (int64_t l = 0; l < lanes; ++l) middle[1][l].Merge(total[l]);
      }
      const Sum* total = totals + slot(a0 + 1) * lanes;
      for (int64_t l = 0; l < lanes; ++l) {
        middle[0][l] = middle[1][l];
        if (a0 + 1 < b) middle[0][l].Merge(total[l]);
      }
    }

    if (one_lane) {
      if constexpr (kPlain) {
        double* heads = staged + B;
        const int64_t n = end - begin;
        PrefixSums(x + begin, n, heads);
        for (int64_t part = 0; part < 2; ++part) {
          const int64_t from = part == 0 ? begin : switch_at, to = part == 0 ? switch_at : end;
          if (from >= to) continue;
          // tail[k] for step begin + k: block a's tail from the step where that window begins.
          const double* tail =
              as_doubles(tails[(a0 + part) & 1]) + blocks.TailOffset(from) - (from - begin);
          const double mid = kMiddle ? middle[part][0].sum : 0.0;
          int64_t k = from - begin;
          const int64_t growing = divisors.GrowingSteps(from, to - from);
          if (const double* inv = divisors.GrowingReciprocals(from, growing)) {
            inv -= k;  // a loop the compiler vectorises
            for (const int64_t grow_end = k + growing; k < grow_end; ++k) {
              y[begin + k] = RoundTo<T>(((tail[k] + mid) + heads[k]) * inv[k]);
            }
          }
          for (const int64_t grow_end = from - begin + growing; k < grow_end; ++k) {
            y[begin + k] = RoundTo<T>(((tail[k] + mid) + heads[k]) * divisors.At(begin + k));
          }
          const double inv = divisors.inv_window;
          if constexpr (kMiddle) {
            for (; k < to - begin; ++k) {
              y[begin + k] = RoundTo<T>(((tail[k] + mid) + heads[k]) * inv);
            }
          } else {
            for (; k < to - begin; ++k) y[begin + k] = RoundTo<T>((tail[k] + heads[k]) * inv);
          }
        }
        if (n == B) totals[slot(b)].sum = heads[B - 1];
      }
    } else {
      int64_t l0 = 0;
      if constexpr (kPlain) {
        // Four or eight lanes: heads and middle sums in vector registers down the block; the
        // same operations as the loop below.
        const auto in_registers = [&](auto pair) {
          constexpr bool kPair = decltype(pair)::value;
          const auto lane_out = [&](const Float64x4& head, const Float64x4& mid, const double* tail,
                                    bool empty_tail, double inv, T* yt) {
            Float64x4 sum = {0.0, 0.0, 0.0, 0.0};
            if (!empty_tail) std::memcpy(&sum, tail, sizeof sum);
            if constexpr (kMiddle) sum += mid;
            sum += head;
            sum *= inv;
            Narrow4(&sum, yt);
          };
          Float64x4 head_lo = {}, head_hi = {};
          for (int64_t part = 0; part < 2; ++part) {
            const int64_t from = part == 0 ? begin : switch_at, to = part == 0 ? switch_at : end;
            if (from >= to) continue;
            const double* tail =
                as_doubles(tails[(a0 + part) & 1] + blocks.TailOffset(from) * lanes);
            const bool empty_tail = empty_tails[(a0 + part) & 1];
            Float64x4 mid_lo = {}, mid_hi = {};
            if constexpr (kMiddle) {
              for (int i = 0; i < 4; ++i) {
                mid_lo[i] = middle[part][i].sum;
                if constexpr (kPair) mid_hi[i] = middle[part][4 + i].sum;
              }
            }
            const auto step = [&](int64_t t, double inv) {
              const T* xt = steps.In(t);
              T* yt = steps.Out(t);
              Float64x4 in;
              Load4(xt, &in);
              head_lo += in;
              lane_out(head_lo, mid_lo, tail, empty_tail, inv, yt);
              if constexpr (kPair) {
                Load4(xt + 4, &in);
                head_hi += in;
                lane_out(head_hi, mid_hi, tail + 4, empty_tail, inv, yt + 4);
              }
              tail += lanes;
            };
            // The growing steps' reciprocals from the table where it holds them (At's values).
            const int64_t grow_end = from + divisors.GrowingSteps(from, to - from);
            int64_t t = from;
            if (const double* inv = divisors.GrowingReciprocals(from, grow_end - from)) {
              for (inv -= from; t < grow_end; ++t) step(t, inv[t]);
            }
            for (; t < grow_end; ++t) step(t, divisors.At(t));
            for (; t < to; ++t) step(t, divisors.inv_window);
          }
          if (end - begin == B) {
            Sum* total = totals + slot(b) * lanes;
            for (int i = 0; i < 4; ++i) {
              total[i].sum = head_lo[i];
              if constexpr (kPair) total[4 + i].sum = head_hi[i];
            }
          }
          l0 = lanes;
        };
        if (InVectorRegisters(lanes)) {
          lanes == 8 ? in_registers(std::true_type{}) : in_registers(std::false_type{});
        }
      }
      for (int64_t l = l0; l < lanes; ++l) head[l] = Sum();
      for (int64_t part = 0; part < 2 && l0 < lanes; ++part) {
        const int64_t from = part == 0 ? begin : switch_at, to = part == 0 ? switch_at : end;
        if (from >= to) continue;
        const Sum* tail = tails[(a0 + part) & 1] + blocks.TailOffset(from) * lanes;
        const bool empty_tail = empty_tails[(a0 + part) & 1];
        const Sum* mid = middle[part];
        const int64_t grow_end = from + divisors.GrowingSteps(from, to - from);
        for (int64_t t = from; t < to; ++t, tail += lanes) {
          const double inv = t < grow_end ? divisors.At(t) : divisors.inv_window;
          const double divisor = divisors.DivisorAt(t);
          const T* xt = steps.In(t);
          T* yt = steps.Out(t);
          for (int64_t l = l0; l < lanes; ++l) {
            head[l].Add(static_cast<double>(xt[l]));
            Sum sum = empty_tail ? Sum() : tail[l];
            if constexpr (kMiddle) sum.Merge(mid[l]);
            sum.Merge(head[l]);
            yt[l] = RoundTo<T>(sum.Mean(inv, divisor));
          }
        }
      }
      if (end - begin == B) {
        Sum* total = totals + slot(b) * lanes;
        for (int64_t l = l0; l < lanes; ++l) total[l] = head[l];
      }
    }
    steps.EndBlock(begin, end);
    // The next block's windows begin in block a0 + 1.
    if (a0 + 1 > tails_done && end < t1) fill_tails(tails_done = a0 + 1);
  }
}
// SplitWindowMeansOf for any Steps (RowLanes, SpanLanes), kMiddle as the layout has it.
template <typename Sum, typename Steps>
void SplitWindowMeansOf(Steps& steps, int64_t lanes, int64_t t0, int64_t t1, int64_t summed,
                        const InverseDivisors<double>& divisors, const SplitLayout& layout,
                        Sum* __restrict__ scratch) {
  if (summed > layout.block) {
    SplitWindowMeansOf<true>(steps, lanes, t0, t1, summed, divisors, layout, scratch);
  } else {
    SplitWindowMeansOf<false>(steps, lanes, t0, t1, summed, divisors, layout, scratch);
  }
}

// Whether a float64 lane's split windows may have overflowed over steps [t0, t1): an output that
// is not finite while the inputs its windows reach hold a value of 2^960 or more (finite values
// whose partial sums can overflow where the window's mean does not).
template <typename T>
bool OverflowedInUnit(const T* x, const T* y, int64_t stride, int64_t t0, int64_t t1,
                      int64_t summed) {
  bool non_finite = false;
  for (int64_t t = t0; t < t1; ++t) non_finite |= !IsFinite(static_cast<double>(y[t * stride]));
  if (!non_finite) return false;
  for (int64_t t = LaneHistory{summed}.WindowBegin(t0); t < t1; ++t) {
    if (Abs(static_cast<double>(x[t * stride])) >= kBigFrom) return true;
  }
  return false;
}

template <typename Sum, typename T>
void SplitWindowMeans(const T* __restrict__ x, T* __restrict__ y, int64_t stride, int64_t lanes,
                      int64_t t0, int64_t t1, int64_t summed,
                      const InverseDivisors<double>& divisors, const SplitLayout& layout,
                      Sum* __restrict__ scratch);

// The outputs of one float64 lane over [t0, t1) that overflowed (see OverflowedInUnit): the
// lane's split windows once more on its inputs scaled by 2^-64 (exact above 2^-958, and no sum of
// them can overflow), every output that was not finite taking its scaled mean times 2^64: finite,
// or the window's own Inf or NaN (an overflow beside an Inf of the other sign read NaN). The steps
// are shifted so that the first block the unit reads is step 0: steps before it lie in no window of
// [t0, t1), and outputs whose divisor still grows have none.
inline void RedoOverflowed(const double* x, double* y, int64_t stride, int64_t t0, int64_t t1,
                           int64_t summed, const InverseDivisors<double>& divisors) {
  const SplitLayout layout = SplitLayoutFor(summed, 1);
  const SplitBlocks blocks{t0, layout.block, summed};
  const int64_t first = Max64(0, blocks.FirstStep(blocks.TailBlock(t0)));
  std::vector<double> scaled(t1 - first), means(t1 - first);
  for (int64_t k = 0; k < t1 - first; ++k) scaled[k] = x[(first + k) * stride] * kOverflowScaleDown;
  std::vector<CompensatedSum> scratch(layout.ScratchSums(1));
  const InverseDivisors<double> shifted(divisors.edge, divisors.window, divisors.position + first);
  SplitWindowMeans(scaled.data(), means.data(), 1, 1, t0 - first, t1 - first, summed, shifted,
                   layout, scratch.data());
  for (int64_t t = t0; t < t1; ++t) {
    const double mean = means[t - first];
    if (!IsFinite(y[t * stride])) y[t * stride] = mean * kOverflowScaleUp;
  }
}

template <typename Sum, typename T>
void SplitWindowMeans(const T* __restrict__ x, T* __restrict__ y, int64_t stride, int64_t lanes,
                      int64_t t0, int64_t t1, int64_t summed,
                      const InverseDivisors<double>& divisors, const SplitLayout& layout,
                      Sum* __restrict__ scratch) {
  RowLanes<T> steps{x, y, stride};
  SplitWindowMeansOf(steps, lanes, t0, t1, summed, divisors, layout, scratch);
}

// SplitWindowMeans of one lane whose summed window is its whole sequence and one block (n <= W,
// B = n: no block before it holds inputs), without its set-up: each output is the block's head,
// the prefix sum, after the empty tail (+0.0) and divided as there. The same bits; packed
// sequences of a few hundred steps take it each.
template <typename T>
inline void OneBlockMeans(const T* __restrict__ x, T* __restrict__ y, int64_t n,
                          const InverseDivisors<double>& divisors, double* __restrict__ heads) {
  PrefixSums(x, n, heads);
  int64_t k = 0;
  const int64_t growing = divisors.GrowingSteps(0, n);
  if (const double* inv = divisors.GrowingReciprocals(0, growing)) {
    for (; k < growing; ++k) y[k] = RoundTo<T>((0.0 + heads[k]) * inv[k]);
  }
  for (; k < growing; ++k) y[k] = RoundTo<T>((0.0 + heads[k]) * divisors.At(k));
  const double inv = divisors.inv_window;
  for (; k < n; ++k) y[k] = RoundTo<T>((0.0 + heads[k]) * inv);
}

}  // namespace causal_moving_avg

#endif  // !defined(__CUDA_ARCH__)

#endif  // CAUSAL_MOVING_AVG_CC_CORE_SPLIT_WINDOWS_H_
