// The TensorFlow-free core of CausalMovingAvg: the single source of truth for the arithmetic,
// shared by the TF CPU kernel, the CUDA kernel (and its host reference) and the NumPy binding.
//
// A tensor is viewed as [outer, steps, inner] (row-major); the average runs along `steps`,
// independently for every (outer, inner) pair:
//   y[t] = (x[t] + x[t-1] + ... + x[t-W+1]) / D(t),   x[j] = 0 for j < 0,
//   D(t) = W for Edge::kZeros and min(t + 1, W) for Edge::kPartial.
//
// Work is cut into units of (row, block of steps, tile of lanes). Block boundaries depend only on
// the shape and the window, never on the number of threads, and every unit restarts its sum from
// the input ("re-anchors"), so results are bitwise identical however units are spread over threads,
// and rounding cannot drift past one block. Inside a block a running sum in a wide accumulator
// (double for 16- and 32-bit inputs, compensated double for 64-bit ones) costs O(1) per output
// whatever W is. A NaN/Inf poisons a running sum for good, so a block that meets one is
// recomputed by a path that counts non-finite values instead of adding them: they then reach
// exactly the W outputs whose window holds them, as with direct summation (and Keras Conv1D).
#ifndef CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_CORE_H_
#define CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_CORE_H_

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#if !defined(__CUDACC__)
#include <sys/mman.h>
#endif

#if defined(__CUDACC__)
#define CMA_HOST_DEVICE __host__ __device__
#else
#define CMA_HOST_DEVICE
#endif

// Unrolls the next loop in device code (fixed trip count: its loads can then all be in flight).
#if defined(__CUDA_ARCH__)
#define CMA_UNROLL _Pragma("unroll")
#else
#define CMA_UNROLL
#endif

namespace causal_moving_avg {

enum class Edge : int { kZeros = 0, kPartial = 1 };

// The op's dtypes, as the type-erased entry points (GPU launcher, XLA handlers) name them.
enum class DType : int { kFloat16 = 0, kBfloat16 = 1, kFloat32 = 2, kFloat64 = 3 };

// The edge mode named as the op's attribute gives it; false for any other name.
inline bool ParseEdge(const char* name, Edge* edge) {
  if (std::strcmp(name, "zeros") == 0) {
    *edge = Edge::kZeros;
  } else if (std::strcmp(name, "partial") == 0) {
    *edge = Edge::kPartial;
  } else {
    return false;
  }
  return true;
}

// The input seen as [outer, steps, inner], row-major.
struct Geometry {
  int64_t outer;
  int64_t steps;
  int64_t inner;
};

// The view of a row-major tensor of `rank` dims averaged along `axis` (0 <= axis < rank).
inline Geometry GeometryOf(const int64_t* dims, int64_t rank, int64_t axis) {
  Geometry geometry{1, dims[axis], 1};
  for (int64_t d = 0; d < axis; ++d) geometry.outer *= dims[d];
  for (int64_t d = axis + 1; d < rank; ++d) geometry.inner *= dims[d];
  return geometry;
}

template <typename Acc>
CMA_HOST_DEVICE inline bool IsFinite(Acc v) {
  return v - v == Acc(0);  // NaN - NaN and Inf - Inf are NaN; needs no <cmath> on the device.
}

// Rounds a float64 result to float32 "to odd": truncated toward zero, with the last bit set when
// anything was cut off. Rounding that to a type with at least two fewer bits gives the same as
// rounding the float64 once.
CMA_HOST_DEVICE inline float RoundToOddFloat(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) != v && v == v) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof(bits));
    if ((f < 0 ? -f : f) > (v < 0 ? -v : v)) --bits;  // rounded away from zero: one step back
    bits |= 1u;
    memcpy(&f, &bits, sizeof(bits));
  }
  return f;
}

// An output, rounded once from its float64 value. 16-bit types convert from float32 (Eigen's half
// and bfloat16, GCC's _Float16 without native support), which would round twice.
template <typename T>
CMA_HOST_DEVICE inline T RoundTo(double v) {
  if constexpr (sizeof(T) == 2) {
    return static_cast<T>(RoundToOddFloat(v));
  } else {
    return static_cast<T>(v);
  }
}

// A running sum in a type much wider than the input: its rounding stays far below the input's.
template <typename Acc>
struct PlainSum {
  using Value = Acc;
  // Its additions may be regrouped (see RunningMeanFast): the rounding stays far below the input's.
  static constexpr bool kRegroupable = true;
  Acc sum = Acc(0);
  CMA_HOST_DEVICE void Add(Acc v) { sum += v; }
  // Forms the difference first, so the loop-carried dependency is a single add.
  CMA_HOST_DEVICE void Slide(Acc entering, Acc leaving) { sum += entering - leaving; }
  // Adds another partial sum (the GPU's block scans combine partial sums of consecutive steps).
  CMA_HOST_DEVICE void Merge(const PlainSum& other) { sum += other.sum; }
  CMA_HOST_DEVICE Acc Get() const { return sum; }
  // The same sum times a power of two (exact, barring overflow and subnormals).
  CMA_HOST_DEVICE PlainSum Scaled(Acc power_of_two) const { return {sum * power_of_two}; }
};

// Double inputs have no wider hardware type: a compensated (TwoSum) running sum keeps the error
// at a few ulps of the window's own magnitude, even after much larger values have passed through.
struct CompensatedSum {
  using Value = double;
  static constexpr bool kRegroupable = false;
  double sum = 0.0;
  double compensation = 0.0;
  CMA_HOST_DEVICE void Add(double v) {
    const double total = sum + v;
    const double v_part = total - sum;
    compensation += (sum - (total - v_part)) + (v - v_part);
    sum = total;
  }
  CMA_HOST_DEVICE void Slide(double entering, double leaving) {
    Add(entering);
    Add(-leaving);
  }
  CMA_HOST_DEVICE void Merge(const CompensatedSum& other) {
    Add(other.sum);
    compensation += other.compensation;
  }
  // Once an Inf/NaN is in the sum the compensation is NaN; the sum alone is then the answer.
  CMA_HOST_DEVICE double Get() const { return IsFinite(sum) ? sum + compensation : sum; }
  CMA_HOST_DEVICE CompensatedSum Scaled(double power_of_two) const {
    return {sum * power_of_two, compensation * power_of_two};
  }
};

// 16- and 32-bit inputs accumulate in double: a running sum's error, relative to the largest
// value in its block, then stays 29+ bits below one rounding of the output. 64-bit inputs
// accumulate in compensated double.
template <typename T>
using SumOf = std::conditional_t<(sizeof(T) < 8), PlainSum<double>, CompensatedSum>;

// How the work is cut into independent units; see MakePlan.
struct Plan {
  Geometry geometry;
  int64_t window;
  Edge edge;
  int64_t block_steps;     // steps per block (the last block of a row may be shorter)
  int64_t lane_tile;       // inner lanes per unit (the last tile may be narrower)
  int64_t blocks_per_row;  // ceil(steps / block_steps)
  int64_t tiles_per_row;   // ceil(inner / lane_tile)
  int64_t num_units;       // outer * blocks_per_row * tiles_per_row
};

// Most lanes one CPU unit carries; bounds the accumulator array a unit keeps on its stack.
constexpr int64_t kMaxLaneTile = 256;
// Elements per CPU block: big enough to amortise the re-anchoring and per-unit overhead.
constexpr int64_t kCpuBlockElements = 1 << 15;

CMA_HOST_DEVICE inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
CMA_HOST_DEVICE inline int64_t Min64(int64_t a, int64_t b) { return a < b ? a : b; }
CMA_HOST_DEVICE inline int64_t Max64(int64_t a, int64_t b) { return a > b ? a : b; }
template <typename V>
CMA_HOST_DEVICE inline void Swap(V* a, V* b) {
  const V t = *a;
  *a = *b;
  *b = t;
}

// `max_lane_tile` is how many lanes one unit advances together: up to kMaxLaneTile on the CPU
// (SIMD over contiguous channels), 1 on the GPU (one thread per lane). A block spans at least
// `min_block_steps` steps. Requires steps, inner >= 1.
inline Plan MakePlan(Geometry geometry, int64_t window, Edge edge, int64_t max_lane_tile,
                     int64_t min_block_steps) {
  Plan plan;
  plan.geometry = geometry;
  plan.window = window;
  plan.edge = edge;
  plan.lane_tile = Min64(geometry.inner, max_lane_tile);
  // Re-anchoring a block reads up to W earlier inputs; blocks of at least 4W keep that below
  // a quarter of the block's own reads, so the cost per output does not grow with W.
  const int64_t effective_window = Min64(window, geometry.steps);
  plan.block_steps = Min64(geometry.steps, Max64(min_block_steps, 4 * effective_window));
  plan.blocks_per_row = CeilDiv(geometry.steps, plan.block_steps);
  plan.tiles_per_row = CeilDiv(geometry.inner, plan.lane_tile);
  plan.num_units = geometry.outer * plan.blocks_per_row * plan.tiles_per_row;
  return plan;
}

// The GPU's plan for its running-sum kernel: one lane per thread, short blocks for many threads.
constexpr int64_t kGpuMinBlockSteps = 64;
inline Plan MakeGpuPlan(Geometry geometry, int64_t window, Edge edge) {
  return MakePlan(geometry, window, edge, /*max_lane_tile=*/1, kGpuMinBlockSteps);
}

// The CPU's plan: wide lane tiles, blocks of about kCpuBlockElements elements.
inline Plan MakeCpuPlan(Geometry geometry, int64_t window, Edge edge) {
  const int64_t lane_tile = Min64(geometry.inner, kMaxLaneTile);
  return MakePlan(geometry, window, edge, kMaxLaneTile, Max64(1, kCpuBlockElements / lane_tile));
}

// Up to this window, a contiguous single sequence on the CPU sums each window directly.
constexpr int64_t kDirectMaxWindow = 4;

template <int64_t kWindow, typename T, typename Acc>
inline void DirectMeansFixed(const T* __restrict__ x, T* __restrict__ y, int64_t t0, int64_t t1,
                             Acc inv_window) {
  // Converts each input once into a small buffer (not W times), then sums shifted loads of it:
  // both loops vectorise whole.
  constexpr int64_t kChunk = 256;
  Acc converted[kChunk + kWindow - 1];
  for (int64_t t = t0; t < t1; t += kChunk) {
    const int64_t n = Min64(kChunk, t1 - t);
    const T* first = x + t - (kWindow - 1);
    for (int64_t k = 0; k < n + kWindow - 1; ++k) converted[k] = static_cast<Acc>(first[k]);
    for (int64_t k = 0; k < n; ++k) {
      Acc sum = converted[k + kWindow - 1];
      for (int64_t j = 1; j < kWindow; ++j) sum += converted[k + kWindow - 1 - j];
      y[t + k] = RoundTo<T>(sum * inv_window);
    }
  }
}

// Direct means of a contiguous sequence over steps [t0, t1), all with a full window (t0 >= W).
template <typename T, typename Acc>
inline void DirectMeans(const T* __restrict__ x, T* __restrict__ y, int64_t t0, int64_t t1,
                        int64_t window, Acc inv_window) {
  switch (window) {
    case 1:
      return DirectMeansFixed<1>(x, y, t0, t1, inv_window);
    case 2:
      return DirectMeansFixed<2>(x, y, t0, t1, inv_window);
    case 3:
      return DirectMeansFixed<3>(x, y, t0, t1, inv_window);
    default:
      return DirectMeansFixed<4>(x, y, t0, t1, inv_window);
  }
}

#if !defined(__CUDA_ARCH__)
// 1 / (t + 1) for steps t < kReciprocalSteps, computed once per process. With the edge 'partial' a
// single sequence divides by t + 1 at every step before its window is full, and a float64
// division costs several products (e.g. [256, 4096, 1] with W = 4096: every output). The values
// are those a division gives, so the bits are the same.
constexpr int64_t kReciprocalSteps = 1 << 15;
template <typename Acc>
const Acc* StepReciprocals() {
  static const std::vector<Acc> table = [] {
    std::vector<Acc> reciprocals(kReciprocalSteps);
    for (int64_t t = 0; t < kReciprocalSteps; ++t)
      reciprocals[t] = Acc(1) / static_cast<Acc>(t + 1);
    return reciprocals;
  }();
  return table.data();
}
#endif

// 1 / (t + 1), from the table on the host while it reaches.
template <typename Acc>
CMA_HOST_DEVICE inline Acc StepReciprocal(int64_t t) {
#if !defined(__CUDA_ARCH__)
  if (t < kReciprocalSteps) return StepReciprocals<Acc>()[t];
#endif
  return Acc(1) / static_cast<Acc>(t + 1);
}

#if !defined(__CUDA_ARCH__)

// Host only (a GPU thread would keep the buffers in slow local memory): a single sequence from
// step t (whose window sum so far, S(t - 1), is *sum) to as close to t1 as whole chunks go; returns
// where it stopped and leaves S of the step before in *sum. A running sum is bound by its one
// loop-carried add, so chunks of steps are done in three vectorised passes over small buffers: the
// differences d(s) = x[s] - x[s - W] (x is 0 before the start), the window sums
// S(s) = S(s - 4) + d(s - 3) + d(s - 2) + d(s - 1) + d(s) (four interleaved running sums: the
// recurrence's distance, 4, spans a whole vector), and the scaled outputs. The regrouping changes
// only rounding far below the input type's (Sum::kRegroupable).
template <typename T, typename Acc>
int64_t SingleLaneChunks(const T* __restrict__ x, T* __restrict__ y, int64_t stride, int64_t t,
                         int64_t t1, int64_t window, Edge edge, Acc* sum) {
  constexpr int64_t kChunk = 256;
  if (t + kChunk > t1) return t;
  const Acc inv_window = Acc(1) / static_cast<Acc>(window);
  // Inputs leave the window `reach` steps after entering; a window longer than the sequence
  // never drops any (and must not overflow the index arithmetic).
  const int64_t reach = Min64(window, t1);
  const auto input = [&](int64_t s) { return s < 0 ? Acc(0) : static_cast<Acc>(x[s * stride]); };
  Acc d[kChunk + 3];     // d[k + 3] = d(t + k)
  Acc sums[kChunk + 4];  // sums[k + 4] = S(t + k)
  // The three differences and four sums before t, backed out from S(t - 1).
  sums[3] = *sum;
  for (int64_t k = 1; k <= 3; ++k) {
    d[3 - k] = input(t - k) - input(t - k - reach);
    sums[3 - k] = sums[4 - k] - d[3 - k];
  }
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
    for (int64_t k = 0; k < kChunk; ++k) {
      sums[k + 4] = sums[k] + ((d[k] + d[k + 1]) + (d[k + 2] + d[k + 3]));
    }
    T* yt = y + t * stride;
    // Steps before the window is full divide by t + 1 with the edge 'partial': reciprocals from
    // the table while it reaches, else divided here (t + 1 + k is formed from an int32 k, so the
    // division vectorises; t + 1 + k is exact in Acc).
    const int32_t partial = edge == Edge::kPartial ? static_cast<int32_t>(filling) : 0;
    Acc divided[kChunk];
    const Acc* partial_inv = divided;
    if (partial > 0 && t + partial <= kReciprocalSteps) {
      partial_inv = StepReciprocals<Acc>() + t;
    } else if (partial > 0) {
      const Acc first_divisor = static_cast<Acc>(t + 1);
      for (int32_t k = 0; k < partial; ++k) {
        divided[k] = Acc(1) / (first_divisor + static_cast<Acc>(k));
      }
    }
    if (stride == 1) {
      for (int32_t k = 0; k < partial; ++k) yt[k] = RoundTo<T>(sums[k + 4] * partial_inv[k]);
      for (int64_t k = partial; k < kChunk; ++k) yt[k] = RoundTo<T>(sums[k + 4] * inv_window);
    } else {
      for (int32_t k = 0; k < partial; ++k) {
        yt[k * stride] = RoundTo<T>(sums[k + 4] * partial_inv[k]);
      }
      for (int64_t k = partial; k < kChunk; ++k) {
        yt[k * stride] = RoundTo<T>(sums[k + 4] * inv_window);
      }
    }
    for (int64_t j = 0; j < 4; ++j) sums[j] = sums[kChunk + j];
    for (int64_t j = 0; j < 3; ++j) d[j] = d[kChunk + j];
  }
  *sum = sums[3];
  return t;
}
#endif

// The fast path: one running sum per lane over steps [t0, t1) of `lanes` contiguous lanes, with
// consecutive steps `stride` elements apart. `acc` receives the `lanes` final sums. Returns false
// when a lane met a NaN/Inf (or overflowed its sum): its outputs are then wrong and the caller
// must recompute that lane with RunningMeanCareful. kFixedLanes > 0 fixes the lane count at
// compile time, so a single sequence keeps its sum in a register rather than in memory.
template <typename T, typename Sum, int64_t kFixedLanes = 0>
CMA_HOST_DEVICE bool RunningMeanFast(const T* __restrict__ x, T* __restrict__ y, int64_t stride,
                                     int64_t lanes, int64_t t0, int64_t t1, int64_t window,
                                     Edge edge, Sum* __restrict__ acc_out) {
  using Acc = typename Sum::Value;
  const int64_t n = kFixedLanes > 0 ? kFixedLanes : lanes;
  Sum local[kFixedLanes > 0 ? kFixedLanes : 1];
  Sum* __restrict__ acc = kFixedLanes > 0 ? local : acc_out;
  // Anchor: acc holds the window that ends just before t0.
  for (int64_t l = 0; l < n; ++l) acc[l] = Sum();
  for (int64_t t = Max64(0, t0 - window); t < t0; ++t) {
    const T* xt = x + t * stride;
    for (int64_t l = 0; l < n; ++l) acc[l].Add(static_cast<Acc>(xt[l]));
  }
  const Acc inv_window = Acc(1) / static_cast<Acc>(window);
  int64_t t = t0;
  // Steps before the window is full, up to `end`: nothing leaves the window yet.
  const auto fill = [&](int64_t end) {
    for (; t < end; ++t) {
      const Acc inv = edge == Edge::kPartial ? StepReciprocal<Acc>(t) : inv_window;
      const T* xt = x + t * stride;
      T* yt = y + t * stride;
      for (int64_t l = 0; l < n; ++l) {
        acc[l].Add(static_cast<Acc>(xt[l]));
        yt[l] = RoundTo<T>(acc[l].Get() * inv);
      }
    }
  };
#if !defined(__CUDA_ARCH__)
  if constexpr (kFixedLanes == 1 && Sum::kRegroupable) {
    if (stride == 1 && window <= kDirectMaxWindow) {
      // Short windows need no running sum: each output sums its W inputs directly, a loop the
      // compiler vectorises whole. The final window's sum is re-formed for the finite check
      // (t1 > t >= W here, so that window lies inside the sequence).
      fill(Min64(t1, window));
      if (t < t1) {
        DirectMeans(x, y, t, t1, window, inv_window);
        t = t1;
        acc[0] = Sum();
        for (int64_t j = t - window; j < t; ++j) acc[0].Add(static_cast<Acc>(x[j]));
      }
    }
    Acc sum = acc[0].Get();
    t = SingleLaneChunks(x, y, stride, t, t1, window, edge, &sum);
    acc[0] = Sum();
    acc[0].Add(sum);
  }
#endif
  fill(Min64(t1, window));
  // Steady state: one element enters, one leaves.
  for (; t < t1; ++t) {
    const T* xt = x + t * stride;
    const T* xo = x + (t - window) * stride;
    T* yt = y + t * stride;
    for (int64_t l = 0; l < n; ++l) {
      acc[l].Slide(static_cast<Acc>(xt[l]), static_cast<Acc>(xo[l]));
      yt[l] = RoundTo<T>(acc[l].Get() * inv_window);
    }
  }
  bool finite = true;
  for (int64_t l = 0; l < n; ++l) {
    finite = finite && IsFinite(acc[l].Get());
    if (kFixedLanes > 0) acc_out[l] = acc[l];
  }
  return finite;
}

// A careful window keeps its finite values scaled down by 2^64, so their sum cannot overflow, even
// for float64 inputs near the largest double, and a mean overflows only if the true mean does.
// Scaling by a power of two is exact for inputs above 2^-958 (about 2.4e-289; below it float64
// inputs lose bits there), so it changes no other result.
constexpr double kCarefulScaleDown = 0x1p-64;
constexpr double kCarefulScaleUp = 0x1p64;

// Running sum of the finite values in a window plus counts of the non-finite ones, so that a
// NaN/Inf affects exactly the outputs whose window holds it. The fast paths fall back to it when
// their sum is not finite: after a NaN/Inf, or after an overflow (float64 inputs only).
template <typename Sum>
struct CarefulWindow {
  using Acc = typename Sum::Value;
  Sum finite_sum;  // scaled by kCarefulScaleDown
  int64_t nans = 0;
  int64_t pos_infs = 0;
  int64_t neg_infs = 0;

  CMA_HOST_DEVICE void Add(Acc v, int64_t sign) {
    if (v != v) {
      nans += sign;
    } else if (!IsFinite(v)) {
      (v > Acc(0) ? pos_infs : neg_infs) += sign;
    } else {
      finite_sum.Add((sign > 0 ? v : -v) * Acc(kCarefulScaleDown));
    }
  }
  CMA_HOST_DEVICE void Merge(const CarefulWindow& other) {
    finite_sum.Merge(other.finite_sum);
    nans += other.nans;
    pos_infs += other.pos_infs;
    neg_infs += other.neg_infs;
  }
  CMA_HOST_DEVICE bool AllFinite() const { return nans == 0 && pos_infs == 0 && neg_infs == 0; }
  // What direct summation gives: NaN if a NaN is present or +Inf meets -Inf, else the Inf.
  CMA_HOST_DEVICE Acc Mean(Acc inv) const {
    if (nans > 0 || (pos_infs > 0 && neg_infs > 0)) return std::numeric_limits<Acc>::quiet_NaN();
    if (pos_infs > 0) return std::numeric_limits<Acc>::infinity();
    if (neg_infs > 0) return -std::numeric_limits<Acc>::infinity();
    // Scaled back up before the division where that cannot overflow (so a mean below 2^-958 is
    // not rounded as a subnormal), after it otherwise (the mean cannot overflow).
    const Acc sum = finite_sum.Get();
    return (sum < 0 ? -sum : sum) < Acc(0x1p959) ? sum * Acc(kCarefulScaleUp) * inv
                                                 : sum * inv * Acc(kCarefulScaleUp);
  }
};

// The outputs of one lane over steps [t0, t1), counting non-finite values; `w` holds the window
// that ends just before t0.
template <typename T, typename Sum>
CMA_HOST_DEVICE void CarefulMeans(CarefulWindow<Sum> w, const T* __restrict__ x, T* __restrict__ y,
                                  int64_t stride, int64_t t0, int64_t t1, int64_t window,
                                  Edge edge) {
  using Acc = typename Sum::Value;
  for (int64_t t = t0; t < t1; ++t) {
    w.Add(static_cast<Acc>(x[t * stride]), 1);
    if (t >= window) w.Add(static_cast<Acc>(x[(t - window) * stride]), -1);
    const int64_t divisor = (edge == Edge::kPartial && t < window) ? t + 1 : window;
    y[t * stride] = RoundTo<T>(w.Mean(Acc(1) / static_cast<Acc>(divisor)));
  }
}

// The slow, exact path for one lane over steps [t0, t1); same contract as RunningMeanFast.
template <typename T, typename Sum>
CMA_HOST_DEVICE void RunningMeanCareful(const T* __restrict__ x, T* __restrict__ y, int64_t stride,
                                        int64_t t0, int64_t t1, int64_t window, Edge edge) {
  using Acc = typename Sum::Value;
  CarefulWindow<Sum> w;
  for (int64_t t = Max64(0, t0 - window); t < t0; ++t) w.Add(static_cast<Acc>(x[t * stride]), 1);
  CarefulMeans<T, Sum>(w, x, y, stride, t0, t1, window, edge);
}

// How many outputs one GPU thread of the direct kernel sums together. Their loads are independent,
// so a thread keeps that many memory requests in flight: with one output at a time, all resident
// threads together hold too few bytes in flight to cover the memory latency.
constexpr int kDirectOutputsPerThread = 4;

// The direct kernel's work for one GPU thread (short windows on narrow layouts): outputs first,
// first + stride, ... (a grid-stride loop), kDirectOutputsPerThread at a time with their loads
// interleaved. Each output sums its window directly: exact by construction, nothing carried
// between outputs. Host-callable, so tests run every thread of a grid on the CPU.
template <typename T>
CMA_HOST_DEVICE void DirectMeansOfThread(Geometry geometry, int64_t window, Edge edge,
                                         const T* __restrict__ x, T* __restrict__ y, int64_t first,
                                         int64_t stride) {
  using Sum = SumOf<T>;
  using Acc = typename Sum::Value;
  constexpr int kGroup = kDirectOutputsPerThread;
  // Products with reciprocals, not divisions: a float64 division per output costs about as much
  // as the rest of an output on a GPU.
  const Acc inv_window = Acc(1) / static_cast<Acc>(window);
  const int64_t count = geometry.outer * geometry.steps * geometry.inner;
  const int64_t longest = Min64(window, geometry.steps);
  // Flat index i = (row * steps + t) * inner + lane. A thread steps (t, lane) by the stride's
  // (dt, dlane) instead of dividing per output (on an H200, W = 3, 2^28 floats: 1.51 -> 1.44 ms).
  const int64_t dlane = stride % geometry.inner;
  const int64_t dt = (stride / geometry.inner) % geometry.steps;
  int64_t lane = first % geometry.inner;
  int64_t t = (first / geometry.inner) % geometry.steps;
  for (int64_t i = first; i < count; i += kGroup * stride) {
    int64_t index[kGroup];
    int64_t terms[kGroup];  // 0 past the end
    CMA_UNROLL
    for (int u = 0; u < kGroup; ++u) {
      index[u] = i + u * stride;
      terms[u] = index[u] < count ? Min64(window, t + 1) : 0;
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
      const Acc inv = edge == Edge::kPartial && terms[u] < window
                          ? Acc(1) / static_cast<Acc>(terms[u])
                          : inv_window;
      Acc mean = sums[u].Get() * inv;
      if (!IsFinite(mean)) {  // rare: a NaN/Inf, or an overflow; as the careful paths do
        CarefulWindow<Sum> careful;
        for (int64_t k = 0; k < terms[u]; ++k) {
          careful.Add(static_cast<Acc>(x[index[u] - k * geometry.inner]), 1);
        }
        mean = careful.Mean(inv);
      }
      y[index[u]] = RoundTo<T>(mean);
    }
  }
}

// Where unit `unit` lives: row, first step, first lane and how many of each it covers.
struct UnitRange {
  int64_t row;
  int64_t t0, t1;
  int64_t lane0, lanes;
};

CMA_HOST_DEVICE inline UnitRange UnitAt(const Plan& plan, int64_t unit) {
  const int64_t tile = unit % plan.tiles_per_row;
  const int64_t rest = unit / plan.tiles_per_row;
  const int64_t block = rest % plan.blocks_per_row;
  UnitRange r;
  r.row = rest / plan.blocks_per_row;
  r.t0 = block * plan.block_steps;
  r.t1 = Min64(plan.geometry.steps, r.t0 + plan.block_steps);
  r.lane0 = tile * plan.lane_tile;
  r.lanes = Min64(plan.lane_tile, plan.geometry.inner - r.lane0);
  return r;
}

// Computes one unit: the fast path, then the careful path for the lanes it could not finish.
// `acc` is scratch for plan.lane_tile sums.
template <typename T, typename Sum = SumOf<T>>
CMA_HOST_DEVICE void ComputeUnit(const Plan& plan, const T* x, T* y, int64_t unit, Sum* acc) {
  const UnitRange r = UnitAt(plan, unit);
  const int64_t stride = plan.geometry.inner;
  const int64_t offset = r.row * plan.geometry.steps * stride + r.lane0;
  const bool finite = r.lanes == 1
                          ? RunningMeanFast<T, Sum, 1>(x + offset, y + offset, stride, 1, r.t0,
                                                       r.t1, plan.window, plan.edge, acc)
                          : RunningMeanFast<T, Sum>(x + offset, y + offset, stride, r.lanes, r.t0,
                                                    r.t1, plan.window, plan.edge, acc);
  if (finite) return;
  for (int64_t l = 0; l < r.lanes; ++l) {
    if (!IsFinite(acc[l].Get())) {
      RunningMeanCareful<T, Sum>(x + offset + l, y + offset + l, stride, r.t0, r.t1, plan.window,
                                 plan.edge);
    }
  }
}

#if !defined(__CUDACC__)
// TensorFlow's and XLA's CPU allocators hand large outputs out as fresh pages, and with
// transparent huge pages in "madvise" mode (the common Linux default) their first touch costs one
// fault per 4 KiB: about half of a large call on some hosts. NumPy asks for huge pages on large
// arrays; so do we, for the whole 2 MiB pages inside an output. Only a hint: without THP it does
// nothing.
inline void HintHugePages(void* data, int64_t bytes) {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  if (bytes < static_cast<int64_t>(kHugePage)) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHugePage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}
#endif

// How many shards a CPU call cuts its units into for `threads` workers: one per worker, but none
// below kMinShardElements elements, where handing work to another thread costs more than it saves.
constexpr int64_t kMinShardElements = int64_t{1} << 15;
inline int64_t ShardCount(const Plan& plan, int64_t threads) {
  const Geometry& g = plan.geometry;
  const int64_t by_size = g.outer * g.steps * g.inner / kMinShardElements;
  return Max64(1, Min64(Min64(threads, plan.num_units), by_size));
}

// The units of shard `shard` of `shards`: contiguous, balanced, whatever the thread count.
inline void ShardUnits(const Plan& plan, int64_t shard, int64_t shards, int64_t* begin,
                       int64_t* end) {
  *begin = plan.num_units * shard / shards;
  *end = plan.num_units * (shard + 1) / shards;
}

// Host code is compiled twice, for AVX2 and for the baseline, and the loader picks one per CPU:
// AVX2 doubles the width of the float64 arithmetic. Without FMA (not part of the "avx2" target)
// both versions round every operation identically, so results do not depend on the CPU.
// `flatten` inlines the whole unit into each version.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    !defined(__SANITIZE_ADDRESS__)
#define CMA_CPU_VERSIONS __attribute__((target_clones("avx2", "default"), flatten))
#else
#define CMA_CPU_VERSIONS
#endif

// Computes units [begin, end) on the calling thread (the CPU entry point; callers shard units).
template <typename T>
CMA_CPU_VERSIONS void ComputeUnits(const Plan& plan, const T* x, T* y, int64_t begin, int64_t end) {
  SumOf<T> acc[kMaxLaneTile];
  for (int64_t unit = begin; unit < end; ++unit) ComputeUnit<T>(plan, x, y, unit, acc);
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_CORE_H_
