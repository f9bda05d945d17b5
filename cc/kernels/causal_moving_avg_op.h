// The TensorFlow glue shared by every device: attribute checks, the [outer, steps, inner] view,
// allocation, and dispatch to a per-device launcher (the functor pattern of TF's own kernels).
#ifndef CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_OP_H_
#define CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_OP_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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
    OP_REQUIRES_OK(ctx, ctx->GetAttr("window", &window_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("axis", &axis_));
    std::string edge;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("edge", &edge));
    edge_ = edge == "partial" ? Edge::kPartial : Edge::kZeros;  // the op's attr allows only these
  }

  void Compute(::tensorflow::OpKernelContext* ctx) override {
    const ::tensorflow::Tensor& x = ctx->input(0);
    const int64_t rank = x.dims();
    OP_REQUIRES_OK(ctx, CheckRankAndAxis(rank, axis_));
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    Geometry geometry{1, x.dim_size(axis), 1};
    for (int64_t d = 0; d < axis; ++d) geometry.outer *= x.dim_size(d);
    for (int64_t d = axis + 1; d < rank; ++d) geometry.inner *= x.dim_size(d);

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
