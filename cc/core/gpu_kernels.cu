// The CUDA kernels of CausalMovingAvg and their launcher: device code only, free of TensorFlow.
// Every caller (the TF GPU kernel, the XLA CUDA handler, the harness) enters through LaunchOnGpu
// (gpu_launch.h). 16-bit inputs run as CUDA's own half types, which have the same layout as
// Eigen's and NumPy's.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cc/core/gpu_direct.h"
#include "cc/core/gpu_grid.h"
#include "cc/core/gpu_launch.h"
#include "cc/core/numerics.h"
#include "cc/core/plan.h"
#include "cc/core/running_means.h"
#include "cc/core/tile_scan.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// Direct summation, kDirectOutputsPerThread outputs per thread and round of a grid-stride loop;
// see DirectMeansOfThread.
template <typename T>
__global__ void DirectMeanKernel(Geometry geometry, int64_t window, Edge edge,
                                 const T* __restrict__ x, T* __restrict__ y) {
  DirectMeansOfThread(geometry, window, edge, x, y,
                      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                      static_cast<int64_t>(gridDim.x) * blockDim.x);
}

// The running sums of the plan's units, one thread per (row, segment of steps, lane): consecutive
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
struct DeviceThreadBlock {
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
    TileSums(DeviceThreadBlock(), plan, x, sums, tile, scratch);
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
    TileMeans(DeviceThreadBlock(), plan, x, y, sums, tile, scratch);
  }
}

namespace {

template <typename T>
cudaError_t Launch(cudaStream_t stream, int sm_count, Geometry geometry, int64_t window, Edge edge,
                   const T* x, T* y, void* scratch, GpuKernel kernel) {
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
      const unsigned blocks = TileScanBlocks(plan.num_tiles, sm_count);
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

}  // namespace

// Every kernel of the library, for each dtype: what LoadGpuKernels loads.
template <typename T>
cudaError_t LoadKernelsOf() {
  cudaFuncAttributes attributes;
  const void* kernels[] = {
      reinterpret_cast<const void*>(&DirectMeanKernel<T>),
      reinterpret_cast<const void*>(&RunningMeanUnitsKernel<T>),
      reinterpret_cast<const void*>(&TileSumsKernel<T>),
      reinterpret_cast<const void*>(&TileMeansKernel<T>),
  };
  for (const void* kernel : kernels) {
    if (const cudaError_t error = cudaFuncGetAttributes(&attributes, kernel);
        error != cudaSuccess) {
      return error;
    }
  }
  return cudaSuccess;
}

cudaError_t LoadGpuKernels() {
#define CMA_LOAD(enumerator, name)                                              \
  if (const cudaError_t error =                                                 \
          LoadKernelsOf<CppTypeOf<__half, __nv_bfloat16, DType::enumerator>>(); \
      error != cudaSuccess) {                                                   \
    return error;                                                               \
  }
  CMA_FOR_EACH_DTYPE(CMA_LOAD)
#undef CMA_LOAD
  return cudaSuccess;
}

GpuStatus LaunchOnGpu(DType dtype, cudaStream_t stream, Geometry geometry, int64_t window,
                      Edge edge, const void* x, void* y, void* scratch, GpuKernel kernel) {
  GpuStatus status;
  // An error an earlier runtime call on this thread left behind is not this launch's: clear it.
  // A sticky one (the context is broken) cannot be cleared: say so instead of blaming the launch.
  if (const cudaError_t earlier = cudaGetLastError(); earlier != cudaSuccess) {
    if (cudaPeekAtLastError() != cudaSuccess) {
      status.step = GpuStatus::Step::kStickyBefore;
      status.error = earlier;
      return status;
    }
  }
  int sm_count = 0;
  status = PrepareCurrentGpu(&sm_count);
  if (!status.ok()) return status;
  switch (dtype) {
#define CMA_LAUNCH(enumerator, name)                                                          \
  case DType::enumerator: {                                                                   \
    using T = CppTypeOf<__half, __nv_bfloat16, DType::enumerator>;                            \
    status.error = Launch(stream, sm_count, geometry, window, edge, static_cast<const T*>(x), \
                          static_cast<T*>(y), scratch, kernel);                               \
    break;                                                                                    \
  }
    CMA_FOR_EACH_DTYPE(CMA_LAUNCH)
#undef CMA_LAUNCH
    default:
      status.error = cudaErrorInvalidValue;
  }
  if (status.error != cudaSuccess) {
    // cudaGetLastError (in Launch) cleared an ordinary launch error; a sticky one stays.
    status.step = cudaPeekAtLastError() != cudaSuccess ? GpuStatus::Step::kStickyAfter
                                                       : GpuStatus::Step::kLaunch;
  }
  return status;
}

}  // namespace causal_moving_avg
