// The TensorFlow glue shared by every device: attribute checks, the [outer, steps, inner] view,
// allocation, and dispatch to a per-device launcher (the functor pattern of TF's own kernels).
#ifndef CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_OP_H_
#define CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_OP_H_

#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "cc/kernels/causal_moving_avg_core.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/tensor.h"

namespace causal_moving_avg {

// The checks both the shape function (at graph construction) and the kernel (at run time) make.
inline absl::Status CheckRankAndAxis(int64_t rank, int64_t axis) {
  if (rank == 0) {
    return absl::InvalidArgumentError(
        "CausalMovingAvg: x must have rank >= 1 (a sequence), got a scalar");
  }
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat("CausalMovingAvg: axis ", axis,
                                                   " is out of range for x of rank ", rank,
                                                   " (allowed: ", -rank, " to ", rank - 1, ")"));
  }
  return absl::OkStatus();
}

// The type-erased name of each TF dtype the op takes.
template <typename T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, Eigen::half>) {
    return DType::kFloat16;
  } else if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    return DType::kBfloat16;
  } else if constexpr (std::is_same_v<T, float>) {
    return DType::kFloat32;
  } else {
    static_assert(std::is_same_v<T, double>, "the op takes half, bfloat16, float and double");
    return DType::kFloat64;
  }
}

// Reads the attributes every kernel (TF's and XLA's) takes, with a clear error for bad ones.
inline absl::Status ReadAttributes(const ::tensorflow::OpKernelConstruction* ctx, int64_t* window,
                                   int64_t* axis, Edge* edge) {
  TF_RETURN_IF_ERROR(ctx->GetAttr("window", window));
  TF_RETURN_IF_ERROR(ctx->GetAttr("axis", axis));
  std::string edge_name;
  TF_RETURN_IF_ERROR(ctx->GetAttr("edge", &edge_name));
  if (*window < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("CausalMovingAvg: window must be >= 1, got ", *window));
  }
  if (!ParseEdge(edge_name.c_str(), edge)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CausalMovingAvg: edge must be 'zeros' or 'partial', got '", edge_name, "'"));
  }
  return absl::OkStatus();
}

// The [outer, steps, inner] view of a shape of known rank, after checking rank and axis.
inline absl::Status ViewOf(absl::Span<const int64_t> dims, int64_t axis, Geometry* geometry) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  TF_RETURN_IF_ERROR(CheckRankAndAxis(rank, axis));
  *geometry = GeometryOf(dims.data(), rank, axis < 0 ? axis + rank : axis);
  return absl::OkStatus();
}

// Computes the op for a non-empty input on one device; defined per device.
template <typename Device, typename T>
struct LaunchCausalMovingAvg {
  absl::Status operator()(::tensorflow::OpKernelContext* ctx, Geometry geometry, int64_t window,
                          Edge edge, const T* x, T* y);
};

template <typename Device, typename T>
class CausalMovingAvgOp : public ::tensorflow::OpKernel {
 public:
  explicit CausalMovingAvgOp(::tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadAttributes(ctx, &window_, &axis_, &edge_));
  }

  void Compute(::tensorflow::OpKernelContext* ctx) override {
    const ::tensorflow::Tensor& x = ctx->input(0);
    Geometry geometry;
    OP_REQUIRES_OK(ctx, ViewOf(x.shape().dim_sizes(), axis_, &geometry));
    ::tensorflow::Tensor* y = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    if (x.NumElements() == 0) return;
    OP_REQUIRES_OK(
        ctx, LaunchCausalMovingAvg<Device, T>()(ctx, geometry, window_, edge_, x.flat<T>().data(),
                                                y->flat<T>().data()));
  }

 private:
  int64_t window_ = 1;
  int64_t axis_ = 0;
  Edge edge_ = Edge::kZeros;
};

}  // namespace causal_moving_avg

#define CMA_REGISTER_KERNEL(DEVICE_NAME, DEVICE_TYPE, T)                                      \
  REGISTER_KERNEL_BUILDER(Name("CausalMovingAvg").Device(DEVICE_NAME).TypeConstraint<T>("T"), \
                          ::causal_moving_avg::CausalMovingAvgOp<DEVICE_TYPE, T>)

#endif  // CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_OP_H_
