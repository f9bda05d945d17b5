// CausalMovingAvg under XLA: lowers the op to one typed-FFI custom call that runs the library's
// own kernels (the FFI handlers in ffi_host.cc and ffi_cuda.cc), so the op computes the same
// bits with and without jit_compile.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cc/core/cpu.h"
#include "cc/core/types.h"
#include "cc/kernels/causal_moving_avg_op.h"
#include "cc/xla/custom_call.h"
#include "tensorflow/compiler/tf2xla/xla_op_kernel.h"
#include "tensorflow/compiler/tf2xla/xla_op_registry.h"
#include "tensorflow/core/framework/kernel_def_builder.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "xla/hlo/builder/xla_builder.h"
#include "xla/layout_util.h"
#include "xla/shape_util.h"

#if GOOGLE_CUDA
#include "cc/core/gpu_launch.h"
#endif

namespace causal_moving_avg {
namespace {

namespace tf = ::tensorflow;

// The three ops (OpInputs) lower to the same custom call, with an empty state and empty ids where
// the op has none.
template <OpInputs kInputs>
class CausalMovingAvgXlaOp : public tf::XlaOpKernel {
 public:
  explicit CausalMovingAvgXlaOp(tf::OpKernelConstruction* ctx)
      : XlaOpKernel(ctx), on_gpu_(ctx->device_type() == tf::DeviceType(tf::DEVICE_GPU_XLA_JIT)) {
    OP_REQUIRES_OK(ctx, ReadAttributes(ctx, &window_, &axis_, &edge_));
  }

  static constexpr bool kStream = kInputs == OpInputs::kStream;
  static constexpr bool kSegments = kInputs == OpInputs::kSegments;

  void Compile(tf::XlaOpKernelContext* ctx) override {
    absl::StatusOr<xla::Shape> input_shape = ctx->InputXlaShape(0);
    OP_REQUIRES_OK(ctx, input_shape.status());
    xla::Shape shape = *std::move(input_shape);
    Geometry geometry;
    OP_REQUIRES_OK(ctx, ViewOf(shape.dimensions(), axis_, &geometry));
    const char* platform = on_gpu_ ? kXlaCudaPlatform : kXlaHostPlatform;
    OP_REQUIRES_OK(ctx, CheckHandler(platform));

    // A custom call takes static shapes: bounded dynamic dimensions are computed at their bound
    // (the extra steps come after the real ones, so a causal average leaves those unchanged) and
    // given back to the result.
    xla::XlaOp x = ctx->Input(0);
    std::vector<std::pair<int64_t, xla::XlaOp>> dynamic_sizes;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.dimensions().size()); ++d) {
      if (!shape.is_dynamic_dimension(d)) continue;
      // A stream's next state is x's last steps: they must be real ones.
      OP_REQUIRES(ctx, !kStream,
                  absl::UnimplementedError(
                      "CausalMovingAvg: a stream's state cannot follow x of a dynamic shape under "
                      "XLA; give x a static shape, or run without jit_compile"));
      dynamic_sizes.emplace_back(d, xla::GetDimensionSize(x, d));
      x = xla::RemoveDynamicDimension(x, d);
      shape.set_dynamic_dimension(d, false);
    }

    // Row-major operand and result, as the handlers read them; the scratch is the GPU's.
    *shape.mutable_layout() = xla::LayoutUtil::GetDefaultLayoutForShape(shape);
    const xla::PrimitiveType type = shape.element_type();
    // The state: x's shape with the averaged axis W - 1 long (an empty array for CausalMovingAvg).
    xla::Shape history_shape = xla::ShapeUtil::MakeShapeWithDenseLayout(type, {0}, {0});
    xla::XlaOp history, seen;
    if constexpr (kStream) {
      history_shape = shape;
      history_shape.set_dimensions(axis_ < 0 ? axis_ + shape.dimensions().size() : axis_,
                                   window_ - 1);
      absl::StatusOr<xla::Shape> given = ctx->InputXlaShape(1);
      OP_REQUIRES_OK(ctx, given.status());
      OP_REQUIRES(ctx, xla::ShapeUtil::Compatible(*given, history_shape),
                  absl::InvalidArgumentError(
                      absl::StrCat("CausalMovingAvg: the state's history has shape ",
                                   xla::ShapeUtil::HumanString(*given), ", but x of shape ",
                                   xla::ShapeUtil::HumanString(shape), " with window ", window_,
                                   " needs ", xla::ShapeUtil::HumanString(history_shape),
                                   " (x's shape with the averaged axis window - 1 long)")));
      history = ctx->Input(1);
      seen = ctx->Input(2);
    } else {
      history = xla::Broadcast(
          xla::ConvertElementType(xla::ConstantR0<float>(ctx->builder(), 0.0f), type), {0});
      seen = xla::ConstantR0<int64_t>(ctx->builder(), 0);
    }
    // Sequence ids: x's dimensions up to the axis (bounded dynamic ones at their bound, as x's).
    xla::XlaOp ids = xla::Broadcast(xla::ConstantR0<int32_t>(ctx->builder(), 0), {0});
    xla::Shape ids_shape = xla::ShapeUtil::MakeShapeWithDenseLayout(xla::S32, {0}, {0});
    Call description{geometry, DTypeOfTf(ctx->input_type(0)), window_, edge_, nullptr, nullptr};
    description.stream = kStream;
    if constexpr (kSegments) {
      absl::StatusOr<xla::Shape> given = ctx->InputXlaShape(1);
      OP_REQUIRES_OK(ctx, given.status());
      ids_shape = *given;
      ids = ctx->Input(1);
      const int64_t last = axis_ < 0 ? axis_ + shape.dimensions().size() : axis_;
      bool fits = static_cast<int64_t>(ids_shape.dimensions().size()) == last + 1;
      for (int64_t d = 0; fits && d <= last; ++d) {
        fits = ids_shape.dimensions(d) == shape.dimensions(d);
        if (ids_shape.is_dynamic_dimension(d)) {
          ids = xla::RemoveDynamicDimension(ids, d);
          ids_shape.set_dynamic_dimension(d, false);
        }
      }
      OP_REQUIRES(
          ctx, fits,
          absl::InvalidArgumentError(absl::StrCat(
              "CausalMovingAvg: segment_ids has shape ", xla::ShapeUtil::HumanString(ids_shape),
              ", but x of shape ", xla::ShapeUtil::HumanString(shape),
              " needs x's dimensions up to and "
              "including axis ",
              axis_)));
      *ids_shape.mutable_layout() = xla::LayoutUtil::GetDefaultLayoutForShape(ids_shape);
      description.ids_kind =
          ids_shape.element_type() == xla::S64 ? Call::Ids::kInt64 : Call::Ids::kInt32;
    }
    int64_t scratch_bytes = CpuScratchBytes(description);
#if GOOGLE_CUDA
    if (on_gpu_) scratch_bytes = GpuScratchBytes(description);
#endif
    const xla::Shape scratch =
        xla::ShapeUtil::MakeShapeWithDenseLayout(xla::U8, {scratch_bytes}, {0});
    const xla::Shape seen_shape = xla::ShapeUtil::MakeShapeWithDenseLayout(xla::S64, {}, {});
    xla::XlaOp call = xla::CustomCallWithLayout(
        ctx->builder(), kXlaTarget, {x, history, seen, ids},
        xla::ShapeUtil::MakeTupleShape({shape, history_shape, seen_shape, scratch}),
        {shape, history_shape, seen_shape, ids_shape},
        XlaAttributesText(XlaAttributesOf(description)),
        /*has_side_effect=*/false,
        /*output_operand_aliasing=*/{}, /*literal=*/nullptr, xla::CustomCallSchedule::SCHEDULE_NONE,
        xla::CustomCallApiVersion::API_VERSION_TYPED_FFI);
    xla::XlaOp y = xla::GetTupleElement(call, 0);
    for (const auto& [dimension, size] : dynamic_sizes)
      y = xla::SetDimensionSize(y, size, dimension);
    ctx->SetOutput(0, y);
    if constexpr (kStream) {
      ctx->SetOutput(1, xla::GetTupleElement(call, 1));
      ctx->SetOutput(2, xla::GetTupleElement(call, 2));
    }
  }

 private:
  static absl::Status CheckHandler(const char* platform) {
    if (XlaHandlerRegistered(platform)) return absl::OkStatus();
    std::string why = "its registration failed (see causal_moving_avg.build_info())";
    if (std::string(platform) == kXlaCudaPlatform) {
#if !GOOGLE_CUDA
      why = "this library was built without CUDA kernels (no CUDA compiler at build time)";
#endif
    }
    return absl::UnimplementedError(
        absl::StrCat("CausalMovingAvg cannot run under XLA on platform ", platform, ": ", why,
                     ". Run it without jit_compile, or rebuild the library."));
  }

  const bool on_gpu_;
  int64_t window_ = 1;
  int64_t axis_ = 0;
  Edge edge_ = Edge::kZeros;
};

template <OpInputs kInputs>
tf::OpKernel* CreateXlaOp(tf::OpKernelConstruction* ctx) {
  return new CausalMovingAvgXlaOp<kInputs>(ctx);
}

REGISTER_XLA_OP(Name("CausalMovingAvg").TypeConstraint("T", TfDataTypes()),
                CausalMovingAvgXlaOp<OpInputs::kX>);
REGISTER_XLA_OP(Name("CausalMovingAvgStream").TypeConstraint("T", TfDataTypes()),
                CausalMovingAvgXlaOp<OpInputs::kStream>);
REGISTER_XLA_OP(Name("CausalMovingAvgSegments").TypeConstraint("T", TfDataTypes()),
                CausalMovingAvgXlaOp<OpInputs::kSegments>);

// XLA turns REGISTER_XLA_OP registrations into kernels for its JIT devices once per process, at
// the first XLA compile. A library loaded after that would have no XLA kernel ("No registered
// 'CausalMovingAvg' OpKernel for XLA_CPU_JIT devices"), so it registers its own then. Whether
// that pass has run shows in any built-in op's kernels: Identity has XLA kernels only after it.
bool XlaKernelsAlreadyBuilt() {
  const tf::KernelList identity = tf::GetRegisteredKernelsForOp("Identity");
  for (const tf::KernelDef& kernel : identity.kernel()) {
    if (kernel.device_type() == tf::DEVICE_CPU_XLA_JIT) return true;
  }
  return false;
}

const bool kLateRegistration = [] {
  if (!XlaKernelsAlreadyBuilt()) return false;
  for (const char* device : {tf::DEVICE_CPU_XLA_JIT, tf::DEVICE_GPU_XLA_JIT}) {
    if (!tf::XlaOpRegistry::IsBackendRegistered(device)) continue;
    const std::pair<const char*, tf::OpKernel* (*)(tf::OpKernelConstruction*)> ops[] = {
        {"CausalMovingAvg", CreateXlaOp<OpInputs::kX>},
        {"CausalMovingAvgStream", CreateXlaOp<OpInputs::kStream>},
        {"CausalMovingAvgSegments", CreateXlaOp<OpInputs::kSegments>},
    };
    for (const auto& [name, factory] : ops) {
      const tf::KernelDef* kernel =
          tf::register_kernel::Name(name).Device(device).TypeConstraint("T", TfDataTypes()).Build();
      new tf::kernel_factory::OpKernelRegistrar(kernel, "CausalMovingAvgXlaOp", factory);
    }
  }
  return true;
}();

}  // namespace
}  // namespace causal_moving_avg
