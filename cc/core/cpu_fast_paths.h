// The CPU's fast paths for a single contiguous sequence (host only: a GPU thread would keep their
// buffers in slow local memory). A running sum is bound by its one loop-carried add, so these
// break that dependency: short windows sum each output directly, longer ones run four
// interleaved running sums, held in one vector register, over chunks of steps.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_CPU_FAST_PATHS_H_
#define CAUSAL_MOVING_AVG_CC_CORE_CPU_FAST_PATHS_H_

#include <cstdint>

#include "cc/core/history.h"
#include "cc/core/numerics.h"
#include "cc/core/types.h"

#if !defined(__CUDA_ARCH__)

namespace causal_moving_avg {

// Steps per chunk of the passes below: their buffers stay in L1.
constexpr int64_t kCpuChunkSteps = 256;

// Four float64 values in one vector (GCC/Clang vector extension; split into halves without AVX).
typedef double Float64x4 __attribute__((vector_size(32)));

// Up to this window, a single sequence sums each output's window directly: W additions per output
// cost less than the split windows' work per block (split_windows.h).
constexpr int64_t kShortWindowMax = 16;

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

template <int64_t kWindow, typename T, typename Acc>
inline void ShortWindowMeansUpTo(const T* __restrict__ x, T* __restrict__ y, int64_t t0, int64_t t1,
                                 int64_t window, Acc inv_window) {
  if constexpr (kWindow > 1) {
    if (window < kWindow)
      return ShortWindowMeansUpTo<kWindow - 1>(x, y, t0, t1, window, inv_window);
  }
  ShortWindowMeansFixed<kWindow>(x, y, t0, t1, inv_window);
}

// Means of a contiguous sequence over steps [t0, t1), all with a full window (t0 >= W), for
// W <= kShortWindowMax.
template <typename T, typename Acc>
inline void ShortWindowMeans(const T* __restrict__ x, T* __restrict__ y, int64_t t0, int64_t t1,
                             int64_t window, Acc inv_window) {
  ShortWindowMeansUpTo<kShortWindowMax>(x, y, t0, t1, window, inv_window);
}

// Means of a contiguous sequence over steps [t0, t1) by direct sums, for a summed window
// Wc = min(W, steps) <= kShortWindowMax: the steps before the window is full one by one, then
// ShortWindowMeans.
template <typename T>
inline void DirectMeans(const T* __restrict__ x, T* __restrict__ y, int64_t t0, int64_t t1,
                        int64_t summed, const InverseDivisors<double>& divisors) {
  const int64_t window = divisors.window;
  const LaneHistory history{summed};
  // Outputs before the window is full, or whose divisor still grows, one by one.
  const int64_t filling_end =
      Min64(t1, summed < window ? t1 : Max64(window, t0 + divisors.GrowingSteps(t0, t1 - t0)));
  int64_t t = t0;
  for (; t < filling_end; ++t) {
    double sum = 0.0;
    for (int64_t j = t; j >= history.WindowBegin(t); --j) sum += static_cast<double>(x[j]);
    y[t] = RoundTo<T>(sum * divisors.At(t));
  }
  if (t < t1) ShortWindowMeans(x, y, t, t1, window, divisors.inv_window);
}

}  // namespace causal_moving_avg

#endif  // !defined(__CUDA_ARCH__)

#endif  // CAUSAL_MOVING_AVG_CC_CORE_CPU_FAST_PATHS_H_
