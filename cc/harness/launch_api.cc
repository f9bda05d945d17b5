// A C entry point to the GPU launcher, free of TensorFlow, for launching the kernels on a stream
// that another CUDA runtime created (CuPy's, PyTorch's), as TensorFlow's and XLA's streams are:
// scripts/gpu_stream_check.py loads build/libcma_gpu_launch.so with ctypes.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cc/core/call.h"
#include "cc/core/gpu_launch.h"
#include "cc/core/types.h"

namespace cma = causal_moving_avg;

extern "C" {

// Device bytes of scratch the launch needs (0 for most shapes).
__attribute__((visibility("default"))) int64_t CausalMovingAvgGpuScratchBytes(
    int dtype, int64_t outer, int64_t steps, int64_t inner, int64_t window) {
  return cma::GpuScratchBytes(cma::Call{{outer, steps, inner},
                                        static_cast<cma::DType>(dtype),
                                        window,
                                        cma::Edge::kZeros,
                                        nullptr,
                                        nullptr});
}

// Enqueues the op on `stream` (a cudaStream_t/CUstream from any runtime; null: the default
// stream) for device pointers x, y and scratch; returns the cudaError_t of the launch. dtype and
// edge are the enumerators' values of cc/core/types.h (float16 0, bfloat16 1, float32 2,
// float64 3; zeros 0, partial 1).
__attribute__((visibility("default"))) int CausalMovingAvgGpuLaunch(int dtype, void* stream,
                                                                    int64_t outer, int64_t steps,
                                                                    int64_t inner, int64_t window,
                                                                    int edge, const void* x,
                                                                    void* y, void* scratch) {
  const cma::Call call{{outer, steps, inner},
                       static_cast<cma::DType>(dtype),
                       window,
                       static_cast<cma::Edge>(edge),
                       x,
                       y};
  if (!cma::CheckCall(call).empty()) return cudaErrorInvalidValue;
  if (call.Elements() == 0) return cudaSuccess;
  return cma::LaunchOnGpu(call, static_cast<cudaStream_t>(stream), scratch).error;
}

}  // extern "C"
