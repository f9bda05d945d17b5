// The GPU launcher's host-side interface, free of TensorFlow and of CUDA device code: which
// kernel a shape runs, the scratch it needs, and one type-erased entry point. The TF GPU kernel,
// the XLA CUDA handler and the standalone harness all launch through LaunchOnGpu; the kernels
// themselves live in gpu_kernels.cu.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_GPU_LAUNCH_H_
#define CAUSAL_MOVING_AVG_CC_CORE_GPU_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cc/core/numerics.h"
#include "cc/core/tile_scan.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// Which kernel a shape runs. One thread per lane coalesces only when a warp's lanes are
// contiguous (inner >= 32): such wide layouts run the running sums of the plan's units. Narrow ones
// sum short windows directly (gpu_direct.h) and longer ones by tile scans (tile_scan.h). kAuto
// means ChooseGpuKernel's choice; the harness forces the others to compare them.
// kGpuDirectMaxWindow comes from that comparison on an H200 (float32, 2^28 elements, inner 1 and
// 8): direct sums were faster up to W = 16, the tile scan from W = 32.
enum class GpuKernel { kAuto, kDirect, kTileScan, kRunning };
constexpr int64_t kGpuDirectMaxWindow = 16;
inline GpuKernel ChooseGpuKernel(Geometry geometry, int64_t window) {
  if (geometry.inner >= kTileMaxInner) return GpuKernel::kRunning;
  return window <= kGpuDirectMaxWindow ? GpuKernel::kDirect : GpuKernel::kTileScan;
}
inline GpuKernel ResolveGpuKernel(GpuKernel kernel, Geometry geometry, int64_t window) {
  return kernel == GpuKernel::kAuto ? ChooseGpuKernel(geometry, window) : kernel;
}

inline const char* GpuKernelName(GpuKernel kernel) {
  switch (kernel) {
    case GpuKernel::kDirect:
      return "direct";
    case GpuKernel::kTileScan:
      return "tile-scan";
    case GpuKernel::kRunning:
      return "running";
    default:
      return "auto";
  }
}

// Device memory the launch needs besides x and y (the tile sums of long windows), in bytes.
inline int64_t GpuScratchBytes(DType dtype, Geometry geometry, int64_t window,
                               GpuKernel kernel = GpuKernel::kAuto) {
  if (ResolveGpuKernel(kernel, geometry, window) != GpuKernel::kTileScan) return 0;
  // Sums of float64 inputs are compensated (SumOf<double>), the others plain float64.
  return dtype == DType::kFloat64 ? TileSumsBytes<SumOf<double>>(MakeTileScanPlan<SumOf<double>>(
                                        geometry, window, Edge::kZeros))
                                  : TileSumsBytes<SumOf<float>>(MakeTileScanPlan<SumOf<float>>(
                                        geometry, window, Edge::kZeros));
}

// Enqueues the op on `stream` for a non-empty input (device pointers of `dtype`) and returns the
// launch status. `sm_count` is the device's multiprocessor count; `scratch` holds at least
// GpuScratchBytes(dtype, geometry, window, kernel) bytes of device memory (may be null when that
// is 0). Any kernel computes any shape, except the tile scan, which needs inner < kTileMaxInner.
cudaError_t LaunchOnGpu(DType dtype, cudaStream_t stream, int sm_count, Geometry geometry,
                        int64_t window, Edge edge, const void* x, void* y, void* scratch,
                        GpuKernel kernel = GpuKernel::kAuto);

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_GPU_LAUNCH_H_
