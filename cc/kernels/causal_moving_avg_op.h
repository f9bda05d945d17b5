// The TensorFlow glue shared by every device: attribute checks, the [outer, steps, inner] view,
// allocation, and dispatch to a per-device launcher (the functor pattern of TF's own kernels).
#ifndef CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_OP_H_
#define CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_OP_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "cc/core/call.h"
#include "cc/core/types.h"
#include "cc/kernels/tf_types.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/types.h"

namespace causal_moving_avg {

// The op's dtypes as TensorFlow names them.
inline std::vector<::tensorflow::DataType> TfDataTypes() {
  return {
#define CMA_TF_DATATYPE(enumerator, name) \
  ::tensorflow::DataTypeToEnum<TfTypeOf<DType::enumerator>>::value,
      CMA_FOR_EACH_DTYPE(CMA_TF_DATATYPE)
#undef CMA_TF_DATATYPE
  };
}

// The dtype of a TF DataType the op takes (its type constraint allows no other).
inline DType DTypeOfTf(::tensorflow::DataType type) {
#define CMA_MATCH(enumerator, name)                                             \
  if (type == ::tensorflow::DataTypeToEnum<TfTypeOf<DType::enumerator>>::value) \
    return DType::enumerator;
  CMA_FOR_EACH_DTYPE(CMA_MATCH)
#undef CMA_MATCH
  return DType::kFloat32;
}

// The checks both the shape function (at graph construction) and the kernels (at run time, and
// at XLA compile time) make.
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

// Reads the attributes every kernel (TF's and XLA's) takes, with a clear error for bad ones.
inline absl::Status ReadAttributes(const ::tensorflow::OpKernelConstruction* ctx, int64_t* window,
                                   int64_t* axis, Edge* edge) {
  TF_RETURN_IF_ERROR(ctx->GetAttr("window", window));
  TF_RETURN_IF_ERROR(ctx->GetAttr("axis", axis));
  std::string edge_name;
  TF_RETURN_IF_ERROR(ctx->GetAttr("edge", &edge_name));
  // An unknown name is reported by name, after the window's check (CheckWindowAndEdge's order).
  const bool known_edge = ParseName(edge_name.c_str(), edge);
  if (const std::string problem = CheckWindowAndEdge(*window, known_edge ? *edge : Edge::kZeros);
      !problem.empty()) {
    return absl::InvalidArgumentError("CausalMovingAvg: " + problem);
  }
  if (!known_edge) {
    return absl::InvalidArgumentError(
        absl::StrCat("CausalMovingAvg: unknown edge '", edge_name, "'"));
  }
  return absl::OkStatus();
}

// The [outer, steps, inner] view of a shape, after checking rank and axis.
inline absl::Status ViewOf(absl::Span<const int64_t> dims, int64_t axis, Geometry* geometry) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  TF_RETURN_IF_ERROR(CheckRankAndAxis(rank, axis));
  *geometry = GeometryOf(dims.data(), rank, axis < 0 ? axis + rank : axis);
  return absl::OkStatus();
}

// Computes a checked, non-empty call on one device; defined per device.
template <typename Device>
struct LaunchCausalMovingAvg {
  absl::Status operator()(::tensorflow::OpKernelContext* ctx, const Call& call);
};

// One kernel class per device for every dtype: it describes the call (cc/core/call.h) and hands
// it to the device's launcher.
template <typename Device>
class CausalMovingAvgOp : public ::tensorflow::OpKernel {
 public:
  explicit CausalMovingAvgOp(::tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadAttributes(ctx, &window_, &axis_, &edge_));
  }

  void Compute(::tensorflow::OpKernelContext* ctx) override {
    const ::tensorflow::Tensor& x = ctx->input(0);
    Geometry view;
    OP_REQUIRES_OK(ctx, ViewOf(x.shape().dim_sizes(), axis_, &view));
    ::tensorflow::Tensor* y = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    const Call call{view, DTypeOfTf(x.dtype()), window_, edge_, x.data(), y->data()};
    if (const std::string problem = CheckCall(call); !problem.empty()) {
      ctx->CtxFailure(absl::InvalidArgumentError("CausalMovingAvg: " + problem));
      return;
    }
    if (call.Elements() == 0) return;
    OP_REQUIRES_OK(ctx, LaunchCausalMovingAvg<Device>()(ctx, call));
  }

 private:
  int64_t window_ = 1;
  int64_t axis_ = 0;
  Edge edge_ = Edge::kZeros;
};

}  // namespace causal_moving_avg

// Registers the op's kernel on a device for every dtype of the list (cc/core/types.h).
#define CMA_REGISTER_KERNEL_FOR_DTYPE(DEVICE_NAME, DEVICE_TYPE, enumerator)                       \
  REGISTER_KERNEL_BUILDER(                                                                        \
      Name("CausalMovingAvg")                                                                     \
          .Device(DEVICE_NAME)                                                                    \
          .TypeConstraint<::causal_moving_avg::TfTypeOf<::causal_moving_avg::DType::enumerator>>( \
              "T"),                                                                               \
      ::causal_moving_avg::CausalMovingAvgOp<DEVICE_TYPE>)

#endif  // CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_OP_H_
