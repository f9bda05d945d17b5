// The GPU's direct kernel, one thread's work, for short windows on narrow layouts: each output
// sums its own window (coalesced across a warp, the overlap served from cache), exact by
// construction, nothing carried between outputs. Host-callable, so tests run every thread of a
// grid on the CPU.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_GPU_DIRECT_H_
#define CAUSAL_MOVING_AVG_CC_CORE_GPU_DIRECT_H_

#include <cstdint>

#include "cc/core/call.h"
#include "cc/core/history.h"
#include "cc/core/numerics.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// How many outputs one thread sums together. Their loads are independent, so a thread keeps that
// many memory requests in flight: with one output at a time, all resident threads together hold
// too few bytes in flight to cover the memory latency.
constexpr int kDirectOutputsPerThread = 4;

// Outputs first, first + grid_threads, ... (a grid-stride loop over the flat index),
// kDirectOutputsPerThread at a time with their loads interleaved.
template <typename T>
CMA_HOST_DEVICE void DirectMeansOfThread(const Call& call, const T* __restrict__ x,
                                         T* __restrict__ y, int64_t first, int64_t grid_threads) {
  using Sum = SumOf<T>;
  using Acc = typename Sum::Value;
  constexpr int kGroup = kDirectOutputsPerThread;
  const Geometry& geometry = call.view;
  const int64_t window = call.window;
  const auto divisors = DivisorsOf<Acc>(call);
  const LaneHistory history{window};
  const int64_t count = call.Elements();
  const int64_t longest = Min64(window, geometry.steps);
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
    Sum sums[kGroup];
    for (int64_t k = 0; k < longest; ++k) {
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
