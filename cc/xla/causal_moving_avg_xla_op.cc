// CausalMovingAvg under XLA: lowers the op to one typed-FFI custom call that runs the library's
// own kernels (the FFI handlers in ffi_host.cc and ffi_cuda.cc), so the op computes the same
// bits with and without jit_compile.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
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

class CausalMovingAvgXlaOp : public tf::XlaOpKernel {
 public:
  explicit CausalMovingAvgXlaOp(tf::OpKernelConstruction* ctx)
      : XlaOpKernel(ctx), on_gpu_(ctx->device_type() == tf::DeviceType(tf::DEVICE_GPU_XLA_JIT)) {
    OP_REQUIRES_OK(ctx, ReadAttributes(ctx, &window_, &axis_, &edge_));
  }

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
      dynamic_sizes.emplace_back(d, xla::GetDimensionSize(x, d));
      x = xla::RemoveDynamicDimension(x, d);
      shape.set_dynamic_dimension(d, false);
    }

    // Row-major operand and result, as the handlers read them; the scratch is the GPU's.
    *shape.mutable_layout() = xla::LayoutUtil::GetDefaultLayoutForShape(shape);
    int64_t scratch_bytes = 0;
#if GOOGLE_CUDA
    if (on_gpu_ && xla::ShapeUtil::ElementsIn(shape) > 0) {
      scratch_bytes = GpuScratchBytes(
          Call{geometry, DTypeOfTf(ctx->input_type(0)), window_, edge_, nullptr, nullptr});
    }
#endif
    const xla::Shape scratch =
        xla::ShapeUtil::MakeShapeWithDenseLayout(xla::U8, {scratch_bytes}, {0});
    xla::XlaOp call = xla::CustomCallWithLayout(
        ctx->builder(), kXlaTarget, {x}, xla::ShapeUtil::MakeTupleShape({shape, scratch}), {shape},
        XlaAttributesText(XlaAttributesOf(geometry, window_, edge_)), /*has_side_effect=*/false,
        /*output_operand_aliasing=*/{}, /*literal=*/nullptr, xla::CustomCallSchedule::SCHEDULE_NONE,
        xla::CustomCallApiVersion::API_VERSION_TYPED_FFI);
    xla::XlaOp y = xla::GetTupleElement(call, 0);
    for (const auto& [dimension, size] : dynamic_sizes)
      y = xla::SetDimensionSize(y, size, dimension);
    ctx->SetOutput(0, y);
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

tf::OpKernel* CreateXlaOp(tf::OpKernelConstruction* ctx) { return new CausalMovingAvgXlaOp(ctx); }

REGISTER_XLA_OP(Name("CausalMovingAvg").TypeConstraint("T", TfDataTypes()), CausalMovingAvgXlaOp);

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
    const tf::KernelDef* kernel = tf::register_kernel::Name("CausalMovingAvg")
                                      .Device(device)
                                      .TypeConstraint("T", TfDataTypes())
                                      .Build();
    new tf::kernel_factory::OpKernelRegistrar(kernel, "CausalMovingAvgXlaOp", CreateXlaOp);
  }
  return true;
}();

}  // namespace
}  // namespace causal_moving_avg
