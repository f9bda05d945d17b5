// The arithmetic every path shares, host and device: rounding to the output type, the running
// sums, the careful sum that counts NaN/Inf instead of adding them, and the divisor of each
// edge mode.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_NUMERICS_H_
#define CAUSAL_MOVING_AVG_CC_CORE_NUMERICS_H_

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "cc/core/types.h"

namespace causal_moving_avg {

template <typename Acc>
CMA_HOST_DEVICE inline bool IsFinite(Acc v) {
  return v - v == Acc(0);  // NaN - NaN and Inf - Inf are NaN; needs no <cmath> on the device.
}

template <typename Acc>
CMA_HOST_DEVICE inline Acc Abs(Acc v) {
  return v < Acc(0) ? -v : v;
}

// Rounds a float64 result to float32 "to odd": truncated toward zero, with the last bit set when
// anything was cut off. Rounding that to a type with at least two fewer bits gives the same as
// rounding the float64 once.
CMA_HOST_DEVICE inline float RoundToOddFloat(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) != v && v == v) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof(bits));
    if (Abs(f) > Abs(v)) --bits;  // rounded away from zero: one step back
    bits |= 1u;
    memcpy(&f, &bits, sizeof(bits));
  }
  return f;
}

// The positive quiet NaN for any NaN: which NaN an addition of two NaNs returns is left to the
// compiled code, so a NaN's sign would otherwise differ between builds and paths. A select on the
// rounded value, which compilers vectorise (a branch on the float64 one they do not).
template <typename F>
CMA_HOST_DEVICE inline F PositiveNaN(F v) {
  return v == v ? v : std::numeric_limits<F>::quiet_NaN();
}

// An output, rounded once from its float64 value, every NaN the positive quiet NaN. 16-bit types
// convert from float32 (Eigen's, CUDA's and the host's half and bfloat16), which would round twice.
template <typename T>
CMA_HOST_DEVICE inline T RoundTo(double v) {
  if constexpr (sizeof(T) == 2) {
    return static_cast<T>(PositiveNaN(RoundToOddFloat(v)));
  } else {
    return PositiveNaN(static_cast<T>(v));
  }
}

// bfloat16 for host code without Eigen or CUDA (the NumPy binding): float32's upper half, rounded
// to nearest even, NaN kept quiet, as Eigen's bfloat16 does, so both give the same bits.
struct HostBfloat16 {
  uint16_t bits;
  HostBfloat16() = default;
  explicit HostBfloat16(float f) {
    uint32_t word;
    memcpy(&word, &f, sizeof(word));
    bits = f != f ? static_cast<uint16_t>((word >> 16 & 0x8000) | 0x7FC0)
                  : static_cast<uint16_t>((word + 0x7FFF + ((word >> 16) & 1)) >> 16);
  }
  operator float() const {
    const uint32_t word = static_cast<uint32_t>(bits) << 16;
    float f;
    memcpy(&f, &word, sizeof(f));
    return f;
  }
};

// IEEE binary16 for host code without Eigen or CUDA (the NumPy binding), converted in software
// as _Float16 converts (nearest even; NaN stays NaN, quiet, its payload's top bits kept), so the
// library needs no compiler-runtime helpers for it.
struct HostHalf {
  uint16_t bits;
  HostHalf() = default;
  explicit HostHalf(float f) {
    uint32_t word;
    memcpy(&word, &f, sizeof(word));
    const uint32_t sign = word >> 16 & 0x8000;
    word &= 0x7FFFFFFF;
    constexpr uint32_t kInfinity = 0x7F800000;
    constexpr uint32_t kHalfOverflow = (127 + 16) << 23;  // 65536: rounds to infinity or beyond
    constexpr uint32_t kHalfNormalMin = 113u << 23;       // 2^-14
    uint32_t half;
    if (word >= kHalfOverflow) {
      half = word > kInfinity ? 0x7E00 | (word >> 13 & 0x3FF) : 0x7C00;
    } else if (word < kHalfNormalMin) {
      // Adding 0.5 (2^-1) puts the half's subnormal step at float32's last bit: the float add
      // rounds to nearest even, and the low bits are the half's.
      constexpr uint32_t kMagic = 126u << 23;
      float value, magic;
      memcpy(&value, &word, sizeof(value));
      memcpy(&magic, &kMagic, sizeof(magic));
      value += magic;
      memcpy(&half, &value, sizeof(half));
      half -= kMagic;
    } else {
      const uint32_t odd = word >> 13 & 1;
      half = (word + (static_cast<uint32_t>(15 - 127) << 23) + 0xFFF + odd) >> 13;
    }
    bits = static_cast<uint16_t>(sign | half);
  }
  operator float() const {
    const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
    const uint32_t exponent = bits >> 10 & 0x1F, mantissa = bits & 0x3FF;
    uint32_t word;
    if (exponent == 0x1F) {  // Inf, or a NaN made quiet
      word = sign | 0x7F800000 | mantissa << 13 | (mantissa ? 0x00400000u : 0u);
    } else if (exponent != 0) {
      word = sign | (exponent + 112) << 23 | mantissa << 13;
    } else {
      const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;  // exact
      memcpy(&word, &magnitude, sizeof(word));
      word |= sign;
    }
    float f;
    memcpy(&f, &word, sizeof(f));
    return f;
  }
};

// a * b = *product + *error exactly (Dekker's product: each half has 26 bits, so the partial
// products are exact). Needs |a|, |b| below 2^995 and products above the subnormal range.
CMA_HOST_DEVICE inline void TwoProduct(double a, double b, double* product, double* error) {
  constexpr double kSplit = 134217729.0;  // 2^27 + 1
  const double a_big = a * kSplit, b_big = b * kSplit;
  const double a_hi = a_big - (a_big - a), b_hi = b_big - (b_big - b);
  const double a_lo = a - a_hi, b_lo = b - b_hi;
  *product = a * b;
  *error = ((a_hi * b_hi - *product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo;
}

// A float64 sum of 16- or 32-bit inputs: the split windows (split_windows.h) never take a value
// out of a sum, so its rounding stays relative to the inputs it holds, 29+ bits below theirs.
struct PlainSum {
  using Value = double;
  double sum = 0.0;
  CMA_HOST_DEVICE void Add(double v) { sum += v; }
  CMA_HOST_DEVICE void Merge(const PlainSum& other) { sum += other.sum; }
  CMA_HOST_DEVICE double Get() const { return sum; }
  // The mean for a divisor and its reciprocal: the product with the reciprocal (its float64
  // rounding stays far below the 16- or 32-bit output's, rounded next).
  CMA_HOST_DEVICE double Mean(double inv, double /*divisor*/) const { return sum * inv; }
};

// A compensated running sum: what each addition rounds away (TwoSum's exact error) is kept in a
// compensation, itself summed with TwoSum into two parts. So a much larger value that has passed
// through the sum leaves only the second part's rounding behind, about 2^-106 of the values the
// compensation holds: the sums of the GPU's kernels (which take values out again), and those of
// float64 inputs on the CPU.
struct CompensatedSum {
  using Value = double;
  double sum = 0.0;
  double compensation = 0.0;
  double compensation_low = 0.0;
  CMA_HOST_DEVICE void Add(double v) {
    const double total = sum + v;
    Compensate(TwoSumError(sum, v, total));
    sum = total;
  }
  CMA_HOST_DEVICE void Slide(double entering, double leaving) {
    Add(entering);
    Add(-leaving);
  }
  CMA_HOST_DEVICE void Merge(const CompensatedSum& other) {
    Add(other.sum);
    Compensate(other.compensation);
    compensation_low += other.compensation_low;
  }
  // The three parts as two: head = fl(sum + compensation) and what that rounded away plus the
  // low part. After a large value has left, sum and compensation can both be large and cancel:
  // their exact sum must come first.
  CMA_HOST_DEVICE void Collapse(double* head, double* tail) const {
    *head = sum + compensation;
    *tail = TwoSumError(sum, compensation, *head) + compensation_low;
  }
  // Once an Inf/NaN is in the sum the compensation is NaN; the sum alone is then the answer.
  CMA_HOST_DEVICE double Get() const {
    if (!IsFinite(sum)) return sum;
    double head, tail;
    Collapse(&head, &tail);
    return head + tail;
  }
  // The mean (head + tail) / divisor rounded once, as a division of the exact sum would
  // give it, at the cost of multiplications: the product q with the reciprocal can be an ulp off
  // (a constant run of 0.7 over 3 steps would read 0.6999999999999998), so q is corrected by the
  // exact remainder sum - q * divisor (Dekker's product, without FMA, so every ISA gives the same
  // bits). Means outside [2^-960, 2^995], where Dekker's split would overflow or its error terms
  // lose bits, are corrected on the sum scaled by a power of two (exact).
  CMA_HOST_DEVICE double Mean(double inv, double divisor) const {
    const double q = Get() * inv;
    if (!IsFinite(q) || q == 0.0) return q;
    const double scale = Abs(q) > 0x1p995 ? 0x1p-128 : Abs(q) < 0x1p-960 ? 0x1p128 : 1.0;
    double head, tail;
    Collapse(&head, &tail);
    const double scaled_sum = head * scale, scaled_compensation = tail * scale;
    const double scaled_q = q * scale;
    double product, error;
    TwoProduct(scaled_q, divisor, &product, &error);
    const double remainder = ((scaled_sum - product) - error) + scaled_compensation;
    return (scaled_q + remainder * inv) / scale;
  }
  CMA_HOST_DEVICE CompensatedSum Scaled(double power_of_two) const {
    return {sum * power_of_two, compensation * power_of_two, compensation_low * power_of_two};
  }

 private:
  // a + b - total exactly, for total = fl(a + b) (Knuth's TwoSum: no ordering needed).
  CMA_HOST_DEVICE static double TwoSumError(double a, double b, double total) {
    const double b_part = total - a;
    return (a - (total - b_part)) + (b - b_part);
  }
  CMA_HOST_DEVICE void Compensate(double lost) {
    const double total = compensation + lost;
    compensation_low += TwoSumError(compensation, lost, total);
    compensation = total;
  }
};

// The running sums of the GPU's kernels, for every dtype.
template <typename T>
using SumOf = CompensatedSum;

// The sums of the CPU's split windows and of the GPU's direct sums, which never take a value out:
// float64 for 16- and 32-bit inputs, compensated float64 for float64 inputs (a float64 sum of
// float64 values would round at their own precision).
template <typename T>
using SplitSumOf = std::conditional_t<(sizeof(T) < 8), PlainSum, CompensatedSum>;
// SplitSumOf's choice for a dtype known at run time: whether its sums are plain.
inline bool SplitSumIsPlain(DType dtype) { return SizeOf(dtype) < 8; }

// Sums of float64 inputs can overflow where their means do not; 16- and 32-bit inputs summed in
// double cannot (2^63 values of at most 2^128).
template <typename Sum>
constexpr bool kSumMayOverflow = std::is_same_v<Sum, CompensatedSum>;

// Overflow needs a value of at least 2^960: 2^63 smaller ones sum to less than 2^1023. Sums of
// windows that hold one are kept a second time scaled by 2^-64, which cannot overflow.
constexpr double kBigFrom = 0x1p960;
constexpr double kOverflowScaleDown = 0x1p-64;
constexpr double kOverflowScaleUp = 0x1p64;

// What a careful sum of float64 values keeps besides: its finite values scaled by
// kOverflowScaleDown, and how many of them are big (>= kBigFrom). Nothing for the sums of
// narrower inputs, which cannot overflow.
template <typename Sum, bool kMayOverflow = kSumMayOverflow<Sum>>
struct OverflowCopy {};
template <typename Sum>
struct OverflowCopy<Sum, true> {
  Sum scaled_sum;
  int64_t big = 0;
};

// A window's running sum that counts NaN/+Inf/-Inf instead of adding them, so that a non-finite
// value affects exactly the outputs whose window holds it (as direct summation, and Keras
// Conv1D, do). The fast paths fall back to it when their sum is not finite: after a NaN/Inf, or
// after a float64 sum overflowed. Its finite values are summed as the fast path sums them (same
// bits); only a window whose float64 sum overflows takes its mean from the scaled copy.
template <typename Sum>
struct CarefulSum : OverflowCopy<Sum> {
  using Acc = typename Sum::Value;
  Sum finite_sum;
  int64_t nans = 0;
  int64_t pos_infs = 0;
  int64_t neg_infs = 0;

  // Adds v (sign +1) or takes it out again (sign -1).
  CMA_HOST_DEVICE void Add(Acc v, int64_t sign) {
    if (v != v) {
      nans += sign;
    } else if (!IsFinite(v)) {
      (v > Acc(0) ? pos_infs : neg_infs) += sign;
    } else {
      const Acc signed_v = sign > 0 ? v : -v;
      finite_sum.Add(signed_v);
      if constexpr (kSumMayOverflow<Sum>) {
        this->scaled_sum.Add(signed_v * Acc(kOverflowScaleDown));
        if (Big(v)) this->big += sign;
      }
    }
  }
  // One step of a sliding window, as the fast path takes it when both values are finite.
  CMA_HOST_DEVICE void Slide(Acc entering, Acc leaving) {
    if (!IsFinite(entering) || !IsFinite(leaving)) {
      Add(entering, 1);
      Add(leaving, -1);
      return;
    }
    finite_sum.Slide(entering, leaving);
    if constexpr (kSumMayOverflow<Sum>) {
      this->scaled_sum.Slide(entering * Acc(kOverflowScaleDown), leaving * Acc(kOverflowScaleDown));
      this->big += (Big(entering) ? 1 : 0) - (Big(leaving) ? 1 : 0);
    }
  }
  CMA_HOST_DEVICE void Merge(const CarefulSum& other) {
    finite_sum.Merge(other.finite_sum);
    nans += other.nans;
    pos_infs += other.pos_infs;
    neg_infs += other.neg_infs;
    if constexpr (kSumMayOverflow<Sum>) {
      this->scaled_sum.Merge(other.scaled_sum);
      this->big += other.big;
    }
  }
  CMA_HOST_DEVICE bool AllFinite() const { return nans == 0 && pos_infs == 0 && neg_infs == 0; }

  // An overflow leaves the finite sum Inf for good. Once the window holds no big value again its
  // sum cannot overflow, and the caller sums its finite values afresh (see CarefulMeans): big
  // values must have entered and left in between, so that happens at most once every W steps.
  CMA_HOST_DEVICE bool FiniteSumLost() const {
    if constexpr (kSumMayOverflow<Sum>) {
      return this->big == 0 && !IsFinite(finite_sum.Get());
    } else {
      return false;
    }
  }

  // What direct summation gives: NaN if a NaN is present or +Inf meets -Inf, else the Inf, else
  // the mean of the finite values (inv = 1 / divisor).
  CMA_HOST_DEVICE Acc Mean(Acc inv, Acc divisor) const {
    if (nans > 0 || (pos_infs > 0 && neg_infs > 0)) return std::numeric_limits<Acc>::quiet_NaN();
    if (pos_infs > 0) return std::numeric_limits<Acc>::infinity();
    if (neg_infs > 0) return -std::numeric_limits<Acc>::infinity();
    const Acc sum = finite_sum.Get();
    if constexpr (kSumMayOverflow<Sum>) {
      if (!IsFinite(sum)) {
        // Scaled back up before the division where that cannot overflow, after it otherwise (the
        // mean cannot overflow).
        const Acc scaled = this->scaled_sum.Get();
        return Abs(scaled) < Acc(0x1p959) ? scaled * Acc(kOverflowScaleUp) * inv
                                          : scaled * inv * Acc(kOverflowScaleUp);
      }
    }
    return finite_sum.Mean(inv, divisor);
  }

 private:
  CMA_HOST_DEVICE static bool Big(Acc v) { return Abs(v) >= Acc(kBigFrom); }
};

#if !defined(__CUDA_ARCH__)
// 1 / (t + 1) for steps t < kReciprocalSteps, computed once per process: the same values a
// division gives (so the same bits), without a float64 division per output at every step of a
// sequence before its window is full.
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

// D(t) and 1 / D(t) for the edge mode: the one place that knows what each mode divides by. Every
// path multiplies by the reciprocals (a float64 division per output is slow, on a GPU above all);
// sums of float64 inputs also take D(t) to correct the product (CompensatedSum::Mean). `position`
// is how many steps of the sequence came before step 0 (a stream's earlier calls; negative in a
// stream's staged history, whose outputs are not used): "partial" counts them.
template <typename Acc>
struct InverseDivisors {
  Edge edge;
  int64_t window;
  int64_t position;
  Acc inv_window;

  CMA_HOST_DEVICE InverseDivisors(Edge edge_mode, int64_t window_steps, int64_t steps_before = 0)
      : edge(edge_mode),
        window(window_steps),
        position(steps_before),
        inv_window(Acc(1) / static_cast<Acc>(window_steps)) {}

  // Step t divides by fewer than W inputs: the edge "partial" before the window is full.
  CMA_HOST_DEVICE bool Grows(int64_t t) const {
    return edge == Edge::kPartial && position + t < window;
  }
  // The inputs the edge "partial" counts at a growing step t (at least one).
  CMA_HOST_DEVICE int64_t Counted(int64_t t) const { return Max64(1, position + t + 1); }

  // D(t) itself, for the sums that correct their product with the reciprocal.
  CMA_HOST_DEVICE Acc DivisorAt(int64_t t) const {
    return static_cast<Acc>(Grows(t) ? Counted(t) : window);
  }

  CMA_HOST_DEVICE Acc At(int64_t t) const {
    if (!Grows(t)) return inv_window;
    const int64_t counted = Counted(t);
#if !defined(__CUDA_ARCH__)
    if (counted <= kReciprocalSteps) return StepReciprocals<Acc>()[counted - 1];
#endif
    return Acc(1) / static_cast<Acc>(counted);
  }

#if !defined(__CUDA_ARCH__)
  // At(t), ..., At(t + n - 1) for n growing steps as consecutive entries of the reciprocals'
  // table, or null where the table does not hold them all.
  const Acc* GrowingReciprocals(int64_t t, int64_t n) const {
    const int64_t first = position + t + 1;
    if (n <= 0 || first < 1 || first + n - 1 > kReciprocalSteps) return nullptr;
    return StepReciprocals<Acc>() + (first - 1);
  }
#endif

  // How many of steps [t, t + n) grow (they come first).
  CMA_HOST_DEVICE int64_t GrowingSteps(int64_t t, int64_t n) const {
    return edge == Edge::kPartial ? Max64(0, Min64(n, window - position - t)) : 0;
  }
};

// The divisors of a call: a stream's count of earlier steps is read where the call computes (on
// a GPU from device memory).
template <typename Acc, typename CallT>
CMA_HOST_DEVICE InverseDivisors<Acc> DivisorsOf(const CallT& call) {
  const int64_t seen =
      call.seen != nullptr && call.edge == Edge::kPartial ? Min64(*call.seen, call.window) : 0;
  return InverseDivisors<Acc>(call.edge, call.window, seen + call.steps_before);
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_NUMERICS_H_
