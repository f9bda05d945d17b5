// The GPU's direct kernel, one thread's work, for short windows on narrow layouts: each output
// sums its own window (coalesced across a warp, the overlap served from cache), exact by
// construction, nothing carried between outputs. A direct sum never takes a value out, so it
// sums as the CPU's split windows do (SplitSumOf: plain float64 for 16- and 32-bit inputs, whose
// rounding stays 29+ bits below theirs; compensated for float64). Host-callable, so tests run
// every thread of a grid on the CPU.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_GPU_DIRECT_H_
#define CAUSAL_MOVING_AVG_CC_CORE_GPU_DIRECT_H_

#include <cstdint>

#include "cc/core/call.h"
#include "cc/core/history.h"
#include "cc/core/numerics.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// How many outputs one thread sums together, their loads interleaved. Measured on an H200
// against 4 and 8 (benchmarks/results/2026-12-04-gpu-h200.md): larger groups were slower.
constexpr int kDirectOutputsPerThread = 2;

// Outputs first, first + grid_threads, ... (a grid-stride loop over the flat index),
// kGroup at a time with their loads interleaved. The GPU harness also times other sums and group
// sizes.
template <typename T, typename Sum = SplitSumOf<T>, int kGroup = kDirectOutputsPerThread>
CMA_HOST_DEVICE void DirectMeansOfThread(const Call& call, const T* __restrict__ x,
                                         T* __restrict__ y, int64_t first, int64_t grid_threads) {
  using Acc = typename Sum::Value;
  const Geometry& geometry = call.view;
  const int64_t window = call.window;
  const auto divisors = DivisorsOf<Acc>(call);
  const LaneHistory history{window};
  const int64_t count = call.Elements();
  // Flat index i = (row * steps + t) * inner + lane. A thread steps (t, lane) by grid_threads'
  // (dt, dlane) instead of dividing per output.
  const int64_t dlane = grid_threads % geometry.inner;
  const int64_t dt = (grid_threads / geometry.inner) % geometry.steps;
  int64_t lane = first % geometry.inner;
  int64_t t = (first / geometry.inner) % geometry.steps;
  for (int64_t i = first; i < count; i += kGroup * grid_threads) {
    int64_t index[kGroup];
    int64_t steps[kGroup];  // each output's step
    int64_t terms[kGroup];  // the inputs each window holds; 0 past the end
    CMA_UNROLL
    for (int u = 0; u < kGroup; ++u) {
      index[u] = i + u * grid_threads;
      steps[u] = t;
      if (index[u] >= count) {
        terms[u] = 0;
      } else if (call.segment_ids != nullptr) {  // the window cut at its sequence's start
        const int64_t row = index[u] / (geometry.steps * geometry.inner);
        terms[u] = LaneHistory{window, call.IdsOfRow(row)}.Terms(t);
      } else {
        terms[u] = history.Terms(t);
      }
      lane += dlane;
      const int64_t carry = lane >= geometry.inner ? 1 : 0;
      lane -= carry * geometry.inner;
      t += dt + carry;  // < 2 * steps, so one wrap at most
      if (t >= geometry.steps) t -= geometry.steps;
    }
    // The group's longest window: a packed sequence's windows are cut at its start, often far
    // below W.
    int64_t group_terms = 0;
    CMA_UNROLL
    for (int u = 0; u < kGroup; ++u) group_terms = Max64(group_terms, terms[u]);
    Sum sums[kGroup];
    for (int64_t k = 0; k < group_terms; ++k) {
      CMA_UNROLL
      for (int u = 0; u < kGroup; ++u) {
        if (k < terms[u]) sums[u].Add(static_cast<Acc>(x[index[u] - k * geometry.inner]));
      }
    }
    CMA_UNROLL
    for (int u = 0; u < kGroup; ++u) {
      if (terms[u] == 0) continue;
      // "partial" counts the window's inputs: from a stream's start (position), or from the
      // sequence's start where ids cut the window (streams take no ids).
      const int64_t counted = call.segment_ids != nullptr ? terms[u] - 1 : steps[u];
      const Acc inv = divisors.At(counted);
      const Acc divisor = divisors.DivisorAt(counted);
      Acc mean = sums[u].Mean(inv, divisor);
      if (!IsFinite(mean)) {  // rare: a NaN/Inf, or an overflow; as the careful paths do
        CarefulSum<Sum> careful;
        for (int64_t k = 0; k < terms[u]; ++k) {
          careful.Add(static_cast<Acc>(x[index[u] - k * geometry.inner]), 1);
        }
        mean = careful.Mean(inv, divisor);
      }
      y[index[u]] = RoundTo<T>(mean);
    }
  }
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_GPU_DIRECT_H_
