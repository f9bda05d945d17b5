// Running sums over a unit of the plan, for the GPU's running kernel (wide layouts) and float64
// inputs on the CPU: O(1) per output whatever W is. Inside a unit a compensated running sum adds
// the entering value and takes out the leaving one. A NaN/Inf (or a float64 overflow) poisons a
// running sum for good, so a lane that meets one is redone by the careful path, which counts
// non-finite values instead.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_RUNNING_MEANS_H_
#define CAUSAL_MOVING_AVG_CC_CORE_RUNNING_MEANS_H_

#include <cstdint>

#include "cc/core/history.h"
#include "cc/core/numerics.h"
#include "cc/core/plan.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// The fast path: one running sum per lane over steps [t0, t1) of `lanes` contiguous lanes, with
// consecutive steps `stride` elements apart. `acc` receives the `lanes` final sums. Returns false
// when a lane met a NaN/Inf (or overflowed its sum): its outputs are then wrong and the caller
// must redo that lane with RunningMeanCareful. kFixedLanes > 0 fixes the lane count at compile
// time, so a single sequence keeps its sum in a register rather than in memory.
template <typename T, typename Sum, int64_t kFixedLanes = 0>
CMA_HOST_DEVICE bool RunningMeanFast(const T* __restrict__ x, T* __restrict__ y, int64_t stride,
                                     int64_t lanes, int64_t t0, int64_t t1,
                                     const InverseDivisors<typename Sum::Value>& divisors,
                                     Sum* __restrict__ acc_out) {
  using Acc = typename Sum::Value;
  const int64_t n = kFixedLanes > 0 ? kFixedLanes : lanes;
  Sum local[kFixedLanes > 0 ? kFixedLanes : 1];
  Sum* __restrict__ acc = kFixedLanes > 0 ? local : acc_out;
  const int64_t window = divisors.window;
  const LaneHistory history{window};
  // Anchor: acc holds the window that ends just before t0.
  for (int64_t l = 0; l < n; ++l) acc[l] = Sum();
  for (int64_t t = history.WindowBegin(t0 - 1); t < t0; ++t) {
    const T* xt = x + t * stride;
    for (int64_t l = 0; l < n; ++l) acc[l].Add(static_cast<Acc>(xt[l]));
  }
  int64_t t = t0;
  // Steps before the window is full, up to `end`: nothing leaves the window yet.
  const auto fill = [&](int64_t end) {
    for (; t < end; ++t) {
      const Acc inv = divisors.At(t);
      const Acc divisor = divisors.DivisorAt(t);
      const T* xt = x + t * stride;
      T* yt = y + t * stride;
      for (int64_t l = 0; l < n; ++l) {
        acc[l].Add(static_cast<Acc>(xt[l]));
        yt[l] = RoundTo<T>(acc[l].Mean(inv, divisor));
      }
    }
  };
  fill(Min64(t1, history.FirstLeaving()));
  // One element enters, one leaves: first the steps whose divisor still grows (a stream's staged
  // history, which holds steps before the stream began), then the steady state.
  const auto slide = [&](int64_t end, bool growing) {
    for (; t < end; ++t) {
      const Acc inv = growing ? divisors.At(t) : divisors.inv_window;
      const Acc divisor = growing ? divisors.DivisorAt(t) : static_cast<Acc>(window);
      const T* xt = x + t * stride;
      const T* xo = x + (t - window) * stride;
      T* yt = y + t * stride;
      for (int64_t l = 0; l < n; ++l) {
        acc[l].Slide(static_cast<Acc>(xt[l]), static_cast<Acc>(xo[l]));
        yt[l] = RoundTo<T>(acc[l].Mean(inv, divisor));
      }
    }
  };
  slide(t + divisors.GrowingSteps(t, t1 - t), true);
  slide(t1, false);
  bool finite = true;
  for (int64_t l = 0; l < n; ++l) {
    finite = finite && IsFinite(acc[l].Get());
    if (kFixedLanes > 0) acc_out[l] = acc[l];
  }
  return finite;
}

// The outputs of one lane over steps [t0, t1), counting non-finite values; `careful` holds the sum
// of the window that ends just before t0.
template <typename T, typename Sum>
CMA_HOST_DEVICE void CarefulMeans(CarefulSum<Sum> careful, const T* __restrict__ x,
                                  T* __restrict__ y, int64_t stride, int64_t t0, int64_t t1,
                                  const InverseDivisors<typename Sum::Value>& divisors) {
  using Acc = typename Sum::Value;
  const int64_t window = divisors.window;
  const LaneHistory history{window};
  for (int64_t t = t0; t < t1; ++t) {
    const Acc entering = static_cast<Acc>(x[t * stride]);
    if (history.Leaves(t)) {
      careful.Slide(entering, static_cast<Acc>(x[(t - window) * stride]));
    } else {
      careful.Add(entering, 1);
    }
    if (careful.FiniteSumLost()) {
      careful.finite_sum = Sum();
      for (int64_t j = history.WindowBegin(t); j <= t; ++j) {
        const Acc v = static_cast<Acc>(x[j * stride]);
        if (IsFinite(v)) careful.finite_sum.Add(v);
      }
    }
    y[t * stride] = RoundTo<T>(careful.Mean(divisors.At(t), divisors.DivisorAt(t)));
  }
}

// The careful path for one lane over steps [t0, t1); same contract as RunningMeanFast.
template <typename T, typename Sum>
CMA_HOST_DEVICE void RunningMeanCareful(const T* __restrict__ x, T* __restrict__ y, int64_t stride,
                                        int64_t t0, int64_t t1,
                                        const InverseDivisors<typename Sum::Value>& divisors) {
  using Acc = typename Sum::Value;
  CarefulSum<Sum> careful;
  for (int64_t t = LaneHistory{divisors.window}.WindowBegin(t0 - 1); t < t0; ++t) {
    careful.Add(static_cast<Acc>(x[t * stride]), 1);
  }
  CarefulMeans<T, Sum>(careful, x, y, stride, t0, t1, divisors);
}

// Computes one unit: the fast path, then the careful path for the lanes it could not finish.
// `acc` is scratch for plan.unit_lanes sums.
template <typename T, typename Sum = SumOf<T>>
CMA_HOST_DEVICE void ComputeUnit(const Plan& plan, const T* x, T* y, int64_t unit, Sum* acc) {
  const UnitRange r = UnitAt(plan, unit);
  const int64_t stride = plan.call.view.inner;
  const int64_t offset = r.row * plan.call.view.steps * stride + r.lane0;
  const auto divisors = DivisorsOf<typename Sum::Value>(plan.call);
  const bool finite = r.lanes == 1 ? RunningMeanFast<T, Sum, 1>(x + offset, y + offset, stride, 1,
                                                                r.t0, r.t1, divisors, acc)
                                   : RunningMeanFast<T, Sum>(x + offset, y + offset, stride,
                                                             r.lanes, r.t0, r.t1, divisors, acc);
  if (finite) return;
  for (int64_t l = 0; l < r.lanes; ++l) {
    if (!IsFinite(acc[l].Get())) {
      RunningMeanCareful<T, Sum>(x + offset + l, y + offset + l, stride, r.t0, r.t1, divisors);
    }
  }
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_RUNNING_MEANS_H_
