// The CUDA kernels of CausalMovingAvg and their launcher, free of TensorFlow: the TF GPU kernel
// and the standalone GPU harness (cc/harness/) call the same LaunchCausalMovingAvgOnGpu.
#ifndef CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_GPU_CU_H_
#define CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_GPU_CU_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "cc/kernels/causal_moving_avg_core.h"
#include "cc/kernels/causal_moving_avg_tile_scan.h"

namespace causal_moving_avg {

constexpr int kGpuThreadsPerBlock = 256;

// Which kernel a shape runs. One thread per lane coalesces only when a warp's lanes are
// contiguous (inner >= 32): such wide layouts run the core's blocked running sums. Narrow ones sum
// short windows directly (each output reads its W inputs, coalesced across the warp, the overlap
// served from L1/L2) and longer ones by tile scans (causal_moving_avg_tile_scan.h).
// kAuto means ChooseGpuKernel's choice; the harness forces the others to compare them.
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
template <typename T>
int64_t GpuScratchBytes(Geometry geometry, int64_t window, GpuKernel kernel = GpuKernel::kAuto) {
  if (ResolveGpuKernel(kernel, geometry, window) != GpuKernel::kTileScan) return 0;
  using Sum = SumOf<T>;
  return TileSumsBytes<Sum>(MakeTileScanPlan<Sum>(geometry, window, Edge::kZeros));
}

// Direct summation, kDirectOutputsPerThread outputs per thread and round of a grid-stride loop;
// see DirectMeansOfThread.
template <typename T>
__global__ void DirectMeanKernel(Geometry geometry, int64_t window, Edge edge,
                                 const T* __restrict__ x, T* __restrict__ y) {
  DirectMeansOfThread(geometry, window, edge, x, y,
                      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                      static_cast<int64_t>(gridDim.x) * blockDim.x);
}

// The core's blocked running sums, one thread per (row, block of steps, lane): consecutive
// threads take consecutive lanes, so a warp's loads and stores are coalesced when inner >= 32.
template <typename T>
__global__ void RunningMeanUnitsKernel(Plan plan, const T* __restrict__ x, T* __restrict__ y) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t unit = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       unit < plan.num_units; unit += stride) {
    SumOf<T> acc;
    ComputeUnit<T>(plan, x, y, unit, &acc);
  }
}

// The device executor of the tile scan's phases: every thread runs the phase, then a barrier.
struct DeviceBlock {
  template <typename Body>
  __device__ void Phase(Body&& body) const {
    body(static_cast<int>(threadIdx.x));
    __syncthreads();
  }
};

// One thread block per tile (grid-stride over tiles; the loop bound is uniform across the block,
// so every thread reaches every barrier).
template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    TileSumsKernel(TileScanPlan plan, const T* __restrict__ x,
                   CarefulWindow<SumOf<T>>* __restrict__ sums) {
  using Sum = SumOf<T>;
  __shared__ alignas(16) unsigned char shared[TileScratch<Sum>::kBytes];
  const TileScratch<Sum> scratch = TileScratch<Sum>::Carve(shared);
  for (int64_t tile = blockIdx.x; tile < plan.num_tiles; tile += gridDim.x) {
    TileSums(DeviceBlock(), plan, x, sums, tile, scratch);
  }
}

template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    TileMeansKernel(TileScanPlan plan, const T* __restrict__ x, T* __restrict__ y,
                    const CarefulWindow<SumOf<T>>* __restrict__ sums) {
  using Sum = SumOf<T>;
  __shared__ alignas(16) unsigned char shared[TileScratch<Sum>::kBytes];
  const TileScratch<Sum> scratch = TileScratch<Sum>::Carve(shared);
  for (int64_t tile = blockIdx.x; tile < plan.num_tiles; tile += gridDim.x) {
    TileMeans(DeviceBlock(), plan, x, y, sums, tile, scratch);
  }
}

// Enough blocks to fill every SM, the rest covered by the grid-stride loops.
inline unsigned GridSize(int64_t work_items, int sm_count) {
  const int64_t wanted = CeilDiv(work_items, kGpuThreadsPerBlock);
  const int64_t resident = static_cast<int64_t>(sm_count) * (2048 / kGpuThreadsPerBlock) * 4;
  return static_cast<unsigned>(Max64(1, Min64(wanted, resident)));
}

// Enqueues the op on `stream` for a non-empty input (device pointers) and returns the launch
// status. `sm_count` is the device's multiprocessor count; `scratch` holds at least
// GpuScratchBytes<T>(geometry, window, kernel) bytes of device memory (may be null when that is
// 0). Any kernel computes any shape, except the tile scan, which needs inner < kTileMaxInner.
template <typename T>
cudaError_t LaunchCausalMovingAvgOnGpu(cudaStream_t stream, int sm_count, Geometry geometry,
                                       int64_t window, Edge edge, const T* x, T* y, void* scratch,
                                       GpuKernel kernel = GpuKernel::kAuto) {
  switch (ResolveGpuKernel(kernel, geometry, window)) {
    case GpuKernel::kDirect: {
      const int64_t count = geometry.outer * geometry.steps * geometry.inner;
      const int64_t threads = CeilDiv(count, kDirectOutputsPerThread);
      DirectMeanKernel<T><<<GridSize(threads, sm_count), kGpuThreadsPerBlock, 0, stream>>>(
          geometry, window, edge, x, y);
      break;
    }
    case GpuKernel::kTileScan: {
      if (geometry.inner >= kTileMaxInner) return cudaErrorInvalidValue;
      using Sum = SumOf<T>;
      const TileScanPlan plan = MakeTileScanPlan<Sum>(geometry, window, edge);
      const unsigned blocks =
          static_cast<unsigned>(Min64(plan.num_tiles, static_cast<int64_t>(sm_count) * 32));
      auto* sums = static_cast<CarefulWindow<Sum>*>(scratch);
      if (plan.whole_tiles > 0) {
        TileSumsKernel<T><<<blocks, kTileThreads, 0, stream>>>(plan, x, sums);
      }
      TileMeansKernel<T><<<blocks, kTileThreads, 0, stream>>>(plan, x, y, sums);
      break;
    }
    default: {  // kRunning
      const Plan plan = MakeGpuPlan(geometry, window, edge);
      RunningMeanUnitsKernel<T>
          <<<GridSize(plan.num_units, sm_count), kGpuThreadsPerBlock, 0, stream>>>(plan, x, y);
      break;
    }
  }
  return cudaGetLastError();
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_GPU_CU_H_
