// The TF GPU kernel: host code that allocates the scratch and launches the CUDA kernels
// (cc/core/gpu_kernels.cu) on TensorFlow's stream for the op.
#define EIGEN_USE_GPU

#include "cc/core/gpu_launch.h"
#include "cc/kernels/causal_moving_avg_op.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace causal_moving_avg {

using GPUDevice = Eigen::GpuDevice;

template <>
struct LaunchCausalMovingAvg<GPUDevice> {
  static constexpr bool kOnHost = false;

  absl::Status operator()(::tensorflow::OpKernelContext* ctx, const Call& call) {
    ::tensorflow::Tensor scratch;
    const int64_t scratch_bytes = GpuScratchBytes(call);
    if (scratch_bytes > 0) {
      TF_RETURN_IF_ERROR(ctx->allocate_temp(::tensorflow::DT_UINT8,
                                            ::tensorflow::TensorShape({scratch_bytes}), &scratch));
    }
    // The launcher asks our own runtime about the device (TensorFlow's context is current here);
    // TensorFlow's cudaDeviceProp was filled by another runtime, whose layout may differ.
    const GpuStatus status =
        LaunchOnGpu(call, ctx->eigen_device<GPUDevice>().stream(),
                    scratch_bytes > 0 ? scratch.flat<uint8_t>().data() : nullptr);
    return status.ok() ? absl::OkStatus() : absl::InternalError(status.Message());
  }
};

#define CMA_REGISTER_GPU(enumerator, name)                                       \
  CMA_REGISTER_KERNEL_FOR_DTYPE(::tensorflow::DEVICE_GPU, GPUDevice, enumerator, \
                                ::tensorflow::DT_INT64);
CMA_FOR_EACH_DTYPE(CMA_REGISTER_GPU)
#undef CMA_REGISTER_GPU

}  // namespace causal_moving_avg
