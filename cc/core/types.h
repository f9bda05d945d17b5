// The vocabulary every part of CausalMovingAvg shares, free of TensorFlow and of CUDA: the edge
// modes and dtypes (one list each, which every binding expands), the [outer, steps, inner] view,
// and small helpers that compile for host and device.
//
// The op: y[t] = (x[t] + x[t-1] + ... + x[t-W+1]) / D(t) along the steps axis, x[j] = 0 for
// j < 0, with D(t) = W for the edge "zeros" and min(t + 1, W) for "partial" (numerics.h).
#ifndef CAUSAL_MOVING_AVG_CC_CORE_TYPES_H_
#define CAUSAL_MOVING_AVG_CC_CORE_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>

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

// The edge modes: X(enumerator, the name users pass). A new mode is a line here, its divisor in
// numerics.h (InverseDivisors), and its tests.
#define CMA_FOR_EACH_EDGE(X) \
  X(kZeros, "zeros")         \
  X(kPartial, "partial")

// The op's dtypes: X(enumerator, the NumPy/Python name). Each binding maps an enumerator to its
// own C++ type (Eigen's, CUDA's or the host's half types) and expands this list to register or
// dispatch.
#define CMA_FOR_EACH_DTYPE(X) \
  X(kFloat16, "float16")      \
  X(kBfloat16, "bfloat16")    \
  X(kFloat32, "float32")      \
  X(kFloat64, "float64")

namespace causal_moving_avg {

#define CMA_ENUMERATOR(enumerator, ...) enumerator,
enum class Edge : int { CMA_FOR_EACH_EDGE(CMA_ENUMERATOR) };
enum class DType : int { CMA_FOR_EACH_DTYPE(CMA_ENUMERATOR) };
#undef CMA_ENUMERATOR

// The C++ type of each dtype for a binding whose 16-bit types are Float16 and Bfloat16 (Eigen's,
// CUDA's or the host's): the list's order, which the enumerators' values follow.
template <typename Float16, typename Bfloat16, DType kDType>
using CppTypeOf =
    std::tuple_element_t<static_cast<size_t>(kDType), std::tuple<Float16, Bfloat16, float, double>>;
static_assert(static_cast<int>(DType::kFloat16) == 0 && static_cast<int>(DType::kFloat64) == 3,
              "CppTypeOf follows CMA_FOR_EACH_DTYPE's order");

// Bytes per element of each dtype.
inline int64_t SizeOf(DType dtype) {
  static constexpr int64_t kSizes[] = {2, 2, 4, 8};  // CMA_FOR_EACH_DTYPE's order
  return kSizes[static_cast<int>(dtype)];
}

// The names of each list's enumerators, in the enumerators' order: one lookup for both lists.
#define CMA_NAME(enumerator, name) name,
inline constexpr const char* kEdgeNames[] = {CMA_FOR_EACH_EDGE(CMA_NAME)};
inline constexpr const char* kDTypeNames[] = {CMA_FOR_EACH_DTYPE(CMA_NAME)};
#undef CMA_NAME
constexpr int kDTypeCount = sizeof(kDTypeNames) / sizeof(kDTypeNames[0]);
template <typename Enum>
struct NamesOf;
template <>
struct NamesOf<Edge> {
  static constexpr const char* const* kNames = kEdgeNames;
  static constexpr int kCount = sizeof(kEdgeNames) / sizeof(kEdgeNames[0]);
};
template <>
struct NamesOf<DType> {
  static constexpr const char* const* kNames = kDTypeNames;
  static constexpr int kCount = kDTypeCount;
};

// The user's name of an edge mode or dtype; "" for a value outside the list.
template <typename Enum>
const char* NameOf(Enum value) {
  const int index = static_cast<int>(value);
  return index >= 0 && index < NamesOf<Enum>::kCount ? NamesOf<Enum>::kNames[index] : "";
}

// The edge mode or dtype a user's name stands for; false for any other name.
template <typename Enum>
bool ParseName(const char* name, Enum* value) {
  for (int index = 0; index < NamesOf<Enum>::kCount; ++index) {
    if (std::strcmp(name, NamesOf<Enum>::kNames[index]) == 0) {
      *value = static_cast<Enum>(index);
      return true;
    }
  }
  return false;
}

// The input seen as [outer, steps, inner], row-major: the average runs along `steps`,
// independently for every (outer, inner) pair ("lane").
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

CMA_HOST_DEVICE inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
CMA_HOST_DEVICE inline int64_t Min64(int64_t a, int64_t b) { return a < b ? a : b; }
CMA_HOST_DEVICE inline int64_t Max64(int64_t a, int64_t b) { return a > b ? a : b; }
template <typename V>
CMA_HOST_DEVICE inline void Swap(V* a, V* b) {
  const V t = *a;
  *a = *b;
  *b = t;
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_TYPES_H_
