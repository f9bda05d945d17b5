// The XLA "CUDA" handler: launches the GPU kernels (the TF GPU kernel's launcher) on the stream
// XLA hands it, with XLA's scratch buffer for the tile sums. Host code; compiled when the CUDA
// kernels are.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "cc/kernels/causal_moving_avg_core.h"
#include "cc/kernels/causal_moving_avg_gpu.h"
#include "cc/xla/custom_call.h"
#include "xla/ffi/api/ffi.h"

namespace causal_moving_avg {
namespace {

namespace ffi = ::xla::ffi;

// The device's multiprocessor count, asked once per device (0 when the query fails).
int SmCount(int32_t device) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> known[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices) return 0;
  int count = known[device].load(std::memory_order_relaxed);
  if (count == 0 &&
      cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) == cudaSuccess) {
    known[device].store(count, std::memory_order_relaxed);
  }
  return count;
}

bool DTypeOfBuffer(ffi::DataType type, DType* dtype) {
  switch (type) {
    case ffi::DataType::F16:
      *dtype = DType::kFloat16;
      return true;
    case ffi::DataType::BF16:
      *dtype = DType::kBfloat16;
      return true;
    case ffi::DataType::F32:
      *dtype = DType::kFloat32;
      return true;
    case ffi::DataType::F64:
      *dtype = DType::kFloat64;
      return true;
    default:
      return false;
  }
}

ffi::Error CudaCall(cudaStream_t stream, int32_t device, ffi::AnyBuffer x,
                    ffi::Result<ffi::AnyBuffer> y, ffi::Result<ffi::AnyBuffer> scratch,
                    int64_t window, int32_t edge, int64_t outer, int64_t steps, int64_t inner) {
  const Geometry geometry{outer, steps, inner};
  const std::string problem = CheckXlaCall(geometry, static_cast<int64_t>(x.element_count()),
                                           static_cast<int64_t>(y->element_count()), window, edge);
  if (!problem.empty()) return ffi::Error::InvalidArgument("CausalMovingAvg: " + problem);
  DType dtype;
  if (!DTypeOfBuffer(x.element_type(), &dtype)) {
    return ffi::Error::InvalidArgument(
        "CausalMovingAvg: x must be float16, bfloat16, float32 or float64");
  }
  if (x.element_count() == 0) return ffi::Error::Success();
  const int64_t scratch_bytes = GpuScratchBytes(dtype, geometry, window);
  if (static_cast<int64_t>(scratch->size_bytes()) < scratch_bytes) {
    return ffi::Error::Internal("CausalMovingAvg: XLA's scratch buffer holds " +
                                std::to_string(scratch->size_bytes()) +
                                " bytes, the kernels need " + std::to_string(scratch_bytes));
  }
  const int sm_count = SmCount(device);
  if (sm_count <= 0) {
    return ffi::Error::Internal("CausalMovingAvg: cannot read the multiprocessor count of device " +
                                std::to_string(device));
  }
  const cudaError_t status =
      LaunchOnGpu(dtype, stream, sm_count, geometry, window, static_cast<Edge>(edge),
                  x.untyped_data(), y->untyped_data(), scratch->untyped_data());
  if (status != cudaSuccess) {
    return ffi::Error::Internal(std::string("CausalMovingAvg: CUDA kernel launch failed: ") +
                                cudaGetErrorString(status));
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(kCudaHandler, CudaCall,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("window")
                                  .Attr<int32_t>("edge")
                                  .Attr<int64_t>("outer")
                                  .Attr<int64_t>("steps")
                                  .Attr<int64_t>("inner"));

const bool kRegistered = (RegisterXlaHandler(kXlaCudaPlatform, kCudaHandler), true);

}  // namespace
}  // namespace causal_moving_avg
