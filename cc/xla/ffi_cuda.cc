// The XLA "CUDA" handler: launches the GPU kernels (the TF GPU kernel's launcher) on the stream
// XLA hands it, with XLA's scratch buffer for the tile sums. Host code; compiled when the CUDA
// kernels are.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "cc/core/gpu_launch.h"
#include "cc/core/types.h"
#include "cc/xla/custom_call.h"
#include "cc/xla/ffi_handler.h"
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

ffi::Error CudaCall(cudaStream_t stream, int32_t device, ffi::AnyBuffer x,
                    ffi::Result<ffi::AnyBuffer> y, ffi::Result<ffi::AnyBuffer> scratch,
                    int64_t window, int32_t edge, int64_t outer, int64_t steps, int64_t inner) {
  XlaCall call{};
  if (ffi::Error error = ReadXlaCall(x, *y, window, edge, outer, steps, inner, &call);
      error.failure()) {
    return error;
  }
  if (x.element_count() == 0) return ffi::Error::Success();
  const int64_t scratch_bytes = GpuScratchBytes(call.dtype, call.geometry, call.window);
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
      LaunchOnGpu(call.dtype, stream, sm_count, call.geometry, call.window, call.edge,
                  x.untyped_data(), y->untyped_data(), scratch->untyped_data());
  if (status != cudaSuccess) {
    return ffi::Error::Internal(std::string("CausalMovingAvg: CUDA kernel launch failed: ") +
                                cudaGetErrorString(status));
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(kCudaHandler, CudaCall,
                              BindCustomCall(ffi::Ffi::Bind()
                                                 .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                                 .Ctx<ffi::DeviceOrdinal>()));

const bool kRegistered = (RegisterXlaHandler(kXlaCudaPlatform, kCudaHandler), true);

}  // namespace
}  // namespace causal_moving_avg
