// Host code beside the CUDA kernels: preparing the current device once (driver check, the
// multiprocessor count from our own runtime, the kernels loaded) and the wording of failures.
// Compiled into the same library as the kernels, against the runtime they are linked with.
#include <cuda_runtime_api.h>

#include <atomic>
#include <string>

#include "cc/core/gpu_grid.h"
#include "cc/core/gpu_launch.h"

namespace causal_moving_avg {

std::string GpuStatus::Message() const {
  const std::string what = std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
  switch (step) {
    case Step::kNone:
      return "";
    case Step::kStickyBefore:
      return "CausalMovingAvg: the CUDA context was already broken by an earlier error (" + what +
             "), before this op launched anything; the process must restart to use this GPU";
    case Step::kDriver:
      return DriverProblem(driver_version, runtime_version);
    case Step::kDeviceQuery:
      return "CausalMovingAvg: cannot query the current CUDA device (" + what + ")";
    case Step::kLoadKernels:
      return "CausalMovingAvg: cannot load the GPU kernels onto the current device (" + what +
             "); a GPU older than the library's architectures (build_info()['cuda_architectures']) "
             "or a device out of memory gives this";
    case Step::kLaunch:
      return "CausalMovingAvg: CUDA kernel launch failed (" + what + ")";
    case Step::kStickyAfter:
      return "CausalMovingAvg: the CUDA context has a sticky error (" + what +
             "), which an earlier kernel on this device may have caused; the process must "
             "restart to use this GPU";
  }
  return "CausalMovingAvg: unknown GPU failure (" + what + ")";
}

namespace {

// Whether the driver runs code of the runtime the kernels were built with; fills the versions.
bool DriverRunsRuntime(GpuStatus* status) {
  cudaDriverGetVersion(&status->driver_version);  // 0 where there is no driver
  status->runtime_version = CUDART_VERSION;
  return DriverProblem(status->driver_version, status->runtime_version).empty();
}

}  // namespace

GpuStatus PrepareCurrentGpu(int* sm_count) {
  GpuStatus status;
  int device = 0;
  if ((status.error = cudaGetDevice(&device)) != cudaSuccess) {
    // The driver check explains the commonest cause of a failing first call.
    cudaGetLastError();
    status.step =
        DriverRunsRuntime(&status) ? GpuStatus::Step::kDeviceQuery : GpuStatus::Step::kDriver;
    return status;
  }
  constexpr int kMaxDevices = 64;
  static std::atomic<int> prepared[kMaxDevices] = {};
  if (device >= 0 && device < kMaxDevices) {
    *sm_count = prepared[device].load(std::memory_order_acquire);
    if (*sm_count > 0) return status;
  }
  if (!DriverRunsRuntime(&status)) {
    status.step = GpuStatus::Step::kDriver;
    return status;
  }
  int count = 0;
  if ((status.error = cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device)) !=
      cudaSuccess) {
    status.step = GpuStatus::Step::kDeviceQuery;
    return status;
  }
  if ((status.error = LoadGpuKernels()) != cudaSuccess) {
    status.step = GpuStatus::Step::kLoadKernels;
    return status;
  }
  *sm_count = count > 0 ? count : 1;
  if (device >= 0 && device < kMaxDevices) {
    prepared[device].store(*sm_count, std::memory_order_release);
  }
  return status;
}

}  // namespace causal_moving_avg
