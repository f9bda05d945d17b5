// The TF GPU kernel: host code that allocates the scratch and launches the CUDA kernels
// (cc/core/gpu_kernels.cu) on TensorFlow's stream for the op.
#define EIGEN_USE_GPU

#include "absl/strings/str_cat.h"
#include "cc/core/gpu_launch.h"
#include "cc/kernels/causal_moving_avg_op.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace causal_moving_avg {

using GPUDevice = Eigen::GpuDevice;

template <typename T>
struct LaunchCausalMovingAvg<GPUDevice, T> {
  absl::Status operator()(::tensorflow::OpKernelContext* ctx, Geometry geometry, int64_t window,
                          Edge edge, const T* x, T* y) {
    const GPUDevice& device = ctx->eigen_device<GPUDevice>();
    constexpr DType dtype = DTypeOf<T>();
    ::tensorflow::Tensor scratch;
    const int64_t scratch_bytes = GpuScratchBytes(dtype, geometry, window);
    if (scratch_bytes > 0) {
      TF_RETURN_IF_ERROR(ctx->allocate_temp(::tensorflow::DT_UINT8,
                                            ::tensorflow::TensorShape({scratch_bytes}), &scratch));
    }
    const cudaError_t status =
        LaunchOnGpu(dtype, device.stream(), device.getNumGpuMultiProcessors(), geometry, window,
                    edge, x, y, scratch_bytes > 0 ? scratch.flat<uint8_t>().data() : nullptr);
    if (status != cudaSuccess) {
      return absl::InternalError(
          absl::StrCat("CausalMovingAvg: CUDA kernel launch failed: ", cudaGetErrorString(status)));
    }
    return absl::OkStatus();
  }
};

#define CMA_REGISTER_GPU(enumerator, name) \
  CMA_REGISTER_KERNEL_FOR_DTYPE(::tensorflow::DEVICE_GPU, GPUDevice, enumerator);
CMA_FOR_EACH_DTYPE(CMA_REGISTER_GPU)
#undef CMA_REGISTER_GPU

}  // namespace causal_moving_avg
