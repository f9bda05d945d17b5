// The XLA "CUDA" handler: launches the GPU kernels (the TF GPU kernel's launcher) on the stream
// XLA hands it, with XLA's scratch buffer for the tile sums. Host code; compiled when the CUDA
// kernels are.
#include <cuda_runtime_api.h>

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

ffi::Error CudaCall(cudaStream_t stream, ffi::AnyBuffer x, ffi::AnyBuffer history,
                    ffi::AnyBuffer seen, ffi::AnyBuffer ids, ffi::Result<ffi::AnyBuffer> y,
                    ffi::Result<ffi::AnyBuffer> next_history, ffi::Result<ffi::AnyBuffer> next_seen,
                    ffi::Result<ffi::AnyBuffer> scratch, XlaCallAttributes attributes) {
  Call call;
  XlaBuffers buffers{x, history, seen, ids, y, next_history, next_seen, scratch};
  if (ffi::Error error = ReadXlaCall(buffers, attributes, &call); error.failure()) return error;
  if (call.Elements() == 0 && !call.IsStream()) return ffi::Error::Success();
  const int64_t scratch_bytes = GpuScratchBytes(call);
  if (static_cast<int64_t>(scratch->size_bytes()) < scratch_bytes) {
    return ffi::Error::Internal("CausalMovingAvg: XLA's scratch buffer holds " +
                                std::to_string(scratch->size_bytes()) +
                                " bytes, the kernels need " + std::to_string(scratch_bytes));
  }
  // XLA made the context of its device current, so the launcher's "current device" is XLA's.
  const GpuStatus status = LaunchOnGpu(call, stream, scratch->untyped_data());
  return status.ok() ? ffi::Error::Success() : ffi::Error::Internal(status.Message());
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    kCudaHandler, CudaCall,
    BindCustomCall(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()));

// Runs when XLA sets up an executable holding the call, before its first execution (XLA has
// made its device's context current): prepares the device, so that the kernels' module is not
// loaded lazily inside a step. The execute handler prepares too, for a runtime that skips this
// stage; preparing is once per device and process.
ffi::Error CudaInitialize(ffi::AnyBuffer, ffi::AnyBuffer, ffi::AnyBuffer, ffi::AnyBuffer,
                          ffi::Result<ffi::AnyBuffer>, ffi::Result<ffi::AnyBuffer>,
                          ffi::Result<ffi::AnyBuffer>, ffi::Result<ffi::AnyBuffer>,
                          XlaCallAttributes) {
  int sm_count = 0;
  const GpuStatus status = PrepareCurrentGpu(&sm_count);
  return status.ok() ? ffi::Error::Success() : ffi::Error::Internal(status.Message());
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(kCudaInitialize, CudaInitialize,
                              BindCustomCall(ffi::Ffi::BindInitialize()));

const bool kRegistered =
    (RegisterXlaHandler(kXlaCudaPlatform, kCudaHandler, kCudaInitialize), true);

}  // namespace
}  // namespace causal_moving_avg
