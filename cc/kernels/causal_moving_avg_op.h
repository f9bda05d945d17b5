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

// The shape of a stream's state for x: x's with the averaged axis W - 1 long.
inline ::tensorflow::TensorShape HistoryShapeOf(const ::tensorflow::TensorShape& x, int64_t axis,
                                                int64_t window) {
  ::tensorflow::TensorShape shape = x;
  shape.set_dim(axis < 0 ? axis + x.dims() : axis, window - 1);
  return shape;
}

// Reads a stream's state (the CausalMovingAvgStream op's inputs 1 and 2) into `call`, with its
// next state's outputs (1 and 2); an error names what does not fit x.
inline absl::Status ReadStream(::tensorflow::OpKernelContext* ctx, int64_t axis, bool on_host,
                               Call* call) {
  const ::tensorflow::Tensor& x = ctx->input(0);
  const ::tensorflow::Tensor& history = ctx->input(1);
  const ::tensorflow::Tensor& seen = ctx->input(2);
  const ::tensorflow::TensorShape expected = HistoryShapeOf(x.shape(), axis, call->window);
  if (history.shape() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CausalMovingAvg: the state's history has shape ", history.shape().DebugString(),
        ", but x of shape ", x.shape().DebugString(), " with window ", call->window, " needs ",
        expected.DebugString(),
        " (x's shape with the averaged axis window - 1 long): a state from another window, "
        "batch or channel count?"));
  }
  if (seen.dims() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("CausalMovingAvg: the state's step count must be a scalar, got shape ",
                     seen.shape().DebugString()));
  }
  if (on_host && seen.scalar<int64_t>()() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CausalMovingAvg: the state's step count must be >= 0, got ", seen.scalar<int64_t>()()));
  }
  ::tensorflow::Tensor *next = nullptr, *next_seen = nullptr;
  TF_RETURN_IF_ERROR(ctx->allocate_output(1, expected, &next));
  TF_RETURN_IF_ERROR(ctx->allocate_output(2, ::tensorflow::TensorShape({}), &next_seen));
  call->stream = true;
  call->history = history.data();
  call->seen = seen.scalar<int64_t>().data();
  call->next_history = next->data();
  call->next_seen = next_seen->scalar<int64_t>().data();
  return absl::OkStatus();
}

// The prefix of x's shape that sequence ids have: the dimensions up to and including the axis.
inline ::tensorflow::TensorShape IdsShapeOf(const ::tensorflow::TensorShape& x, int64_t axis) {
  ::tensorflow::TensorShape shape;
  const int64_t last = axis < 0 ? axis + x.dims() : axis;
  for (int64_t d = 0; d <= last; ++d) shape.AddDim(x.dim_size(d));
  return shape;
}

// Reads sequence ids (the CausalMovingAvgSegments op's input 1) into `call`.
inline absl::Status ReadSegments(::tensorflow::OpKernelContext* ctx, int64_t axis, Call* call) {
  const ::tensorflow::Tensor& x = ctx->input(0);
  const ::tensorflow::Tensor& ids = ctx->input(1);
  const ::tensorflow::TensorShape expected = IdsShapeOf(x.shape(), axis);
  if (ids.shape() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CausalMovingAvg: segment_ids has shape ", ids.shape().DebugString(), ", but x of shape ",
        x.shape().DebugString(), " averaged along axis ", axis, " needs ", expected.DebugString(),
        " (x's dimensions up to and including the axis)"));
  }
  call->ids_kind = ids.dtype() == ::tensorflow::DT_INT64 ? Call::Ids::kInt64 : Call::Ids::kInt32;
  call->segment_ids = ids.data();
  return absl::OkStatus();
}

// Computes a checked call on one device (non-empty, or a stream's state to carry); defined per
// device, with kOnHost: whether the device's inputs are in host memory.
template <typename Device>
struct LaunchCausalMovingAvg;

// Which op a kernel runs: CausalMovingAvg (x), CausalMovingAvgStream (x and a stream's state in,
// the next state out) or CausalMovingAvgSegments (x and sequence ids).
enum class OpInputs { kX, kStream, kSegments };

// One kernel class per device for every dtype and the three ops: it describes the call
// (cc/core/call.h) and hands it to the device's launcher.
template <typename Device, OpInputs kInputs>
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
    Call call{view, DTypeOfTf(x.dtype()), window_, edge_, x.data(), y->data()};
    if constexpr (kInputs == OpInputs::kStream) {
      OP_REQUIRES_OK(ctx, ReadStream(ctx, axis_, LaunchCausalMovingAvg<Device>::kOnHost, &call));
    }
    if constexpr (kInputs == OpInputs::kSegments) {
      OP_REQUIRES_OK(ctx, ReadSegments(ctx, axis_, &call));
    }
    if (const std::string problem = CheckCall(call); !problem.empty()) {
      ctx->CtxFailure(absl::InvalidArgumentError("CausalMovingAvg: " + problem));
      return;
    }
    if (call.Elements() == 0 && !call.IsStream()) return;
    OP_REQUIRES_OK(ctx, LaunchCausalMovingAvg<Device>()(ctx, call));
  }

 private:
  int64_t window_ = 1;
  int64_t axis_ = 0;
  Edge edge_ = Edge::kZeros;
};

}  // namespace causal_moving_avg

// Registers the three ops' kernels on a device for every dtype of the list (cc/core/types.h).
// IDS_TYPES constrains the sequence ids: TensorFlow keeps the int32 inputs of GPU kernels in host
// memory, so the GPU kernel takes int64 ids only (int32 ones run on the CPU kernel there).
#define CMA_REGISTER_KERNEL_FOR_DTYPE(DEVICE_NAME, DEVICE_TYPE, enumerator, IDS_TYPES)         \
  CMA_REGISTER_ONE_KERNEL(Name("CausalMovingAvg"), DEVICE_NAME, DEVICE_TYPE, enumerator, kX);  \
  CMA_REGISTER_ONE_KERNEL(Name("CausalMovingAvgStream"), DEVICE_NAME, DEVICE_TYPE, enumerator, \
                          kStream);                                                            \
  CMA_REGISTER_ONE_KERNEL(Name("CausalMovingAvgSegments").TypeConstraint("Tids", IDS_TYPES),   \
                          DEVICE_NAME, DEVICE_TYPE, enumerator, kSegments)
#define CMA_REGISTER_ONE_KERNEL(NAME, DEVICE_NAME, DEVICE_TYPE, enumerator, INPUTS)               \
  REGISTER_KERNEL_BUILDER(                                                                        \
      NAME.Device(DEVICE_NAME)                                                                    \
          .TypeConstraint<::causal_moving_avg::TfTypeOf<::causal_moving_avg::DType::enumerator>>( \
              "T"),                                                                               \
      ::causal_moving_avg::CausalMovingAvgOp<DEVICE_TYPE, ::causal_moving_avg::OpInputs::INPUTS>)

#endif  // CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_OP_H_
