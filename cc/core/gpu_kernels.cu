// The CUDA kernels of CausalMovingAvg and their launcher: device code only, free of TensorFlow.
// Every caller (the TF GPU kernel, the XLA CUDA handler, the harness) enters through LaunchOnGpu
// (gpu_launch.h). 16-bit inputs run as CUDA's own half types, which have the same layout as
// Eigen's and NumPy's.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cc/core/call.h"
#include "cc/core/gpu_direct.h"
#include "cc/core/gpu_grid.h"
#include "cc/core/gpu_launch.h"
#include "cc/core/numerics.h"
#include "cc/core/plan.h"
#include "cc/core/running_means.h"
#include "cc/core/stream.h"
#include "cc/core/tile_scan.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// Direct summation, kDirectOutputsPerThread outputs per thread and round of a grid-stride loop;
// see DirectMeansOfThread.
template <typename T>
__global__ void DirectMeanKernel(Call call, const T* __restrict__ x, T* __restrict__ y) {
  DirectMeansOfThread(call, x, y, static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                      static_cast<int64_t>(gridDim.x) * blockDim.x);
}

// The running sums of the plan's units, one thread per (row, span of steps, lane): consecutive
// threads take consecutive lanes, so a warp's loads and stores are coalesced when inner >= 32.
template <typename T>
__global__ void RunningMeanUnitsKernel(Plan plan, const T* __restrict__ x, T* __restrict__ y) {
  const int64_t grid_threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t unit = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       unit < plan.num_units; unit += grid_threads) {
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
                   CarefulSum<SumOf<T>>* __restrict__ sums) {
  using Sum = SumOf<T>;
  alignas(16) __shared__ unsigned char shared[TileScratch<Sum>::kBytes];
  const TileScratch<Sum> scratch = TileScratch<Sum>::Carve(shared);
  for (int64_t tile = blockIdx.x; tile < plan.num_tiles; tile += gridDim.x) {
    TileSums(DeviceThreadBlock(), plan, x, sums, tile, scratch);
  }
}

template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    TileMeansKernel(TileScanPlan plan, const T* __restrict__ x, T* __restrict__ y,
                    const CarefulSum<SumOf<T>>* __restrict__ sums) {
  using Sum = SumOf<T>;
  alignas(16) __shared__ unsigned char shared[TileScratch<Sum>::kBytes];
  const TileScratch<Sum> scratch = TileScratch<Sum>::Carve(shared);
  for (int64_t tile = blockIdx.x; tile < plan.num_tiles; tile += gridDim.x) {
    TileMeans(DeviceThreadBlock(), plan, x, y, sums, tile, scratch);
  }
}

// A stream's copies (stream.h), one element per thread of a grid-stride loop.
template <typename T>
__global__ void StageInputsKernel(Call call, StreamStage stage, T* __restrict__ stage_x) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < stage.Elements(); i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    stage_x[i] = StageInputAt<T>(call, stage, i);
  }
}

template <typename T>
__global__ void HeadOutputsKernel(Call call, StreamStage stage, const T* __restrict__ stage_y) {
  const int64_t count = call.view.outer * stage.head_steps * call.view.inner;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    static_cast<T*>(call.y)[HeadOutputOf(call, stage, i)] = stage_y[StageOutputOf(call, stage, i)];
  }
}

// Also the next step count (thread 0), so that it stays on the device.
template <typename T>
__global__ void NextHistoryKernel(Call call) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *call.next_seen = NextSeen(call);
  const int64_t count = call.view.outer * call.HistorySteps() * call.view.inner;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    static_cast<T*>(call.next_history)[i] = NextHistoryAt<T>(call, i);
  }
}

namespace {

template <typename T>
cudaError_t Launch(const Call& call, cudaStream_t stream, int sm_count, void* scratch,
                   GpuKernel kernel) {
  const T* x = static_cast<const T*>(call.x);
  T* y = static_cast<T*>(call.y);
  switch (ResolveGpuKernel(kernel, call)) {
    case GpuKernel::kDirect: {
      const int64_t threads = CeilDiv(call.Elements(), kDirectOutputsPerThread);
      DirectMeanKernel<T>
          <<<GridSize(threads, sm_count), kGpuThreadsPerBlock, 0, stream>>>(call, x, y);
      break;
    }
    case GpuKernel::kTileScan: {
      if (call.view.inner >= kTileMaxInner) return cudaErrorInvalidValue;
      using Sum = SumOf<T>;
      const TileScanPlan plan = MakeTileScanPlan<Sum>(call);
      const unsigned blocks = TileScanBlocks(plan.num_tiles, sm_count);
      auto* sums = static_cast<CarefulSum<Sum>*>(scratch);
      if (plan.whole_tiles > 0) {
        TileSumsKernel<T><<<blocks, kTileThreads, 0, stream>>>(plan, x, sums);
      }
      TileMeansKernel<T><<<blocks, kTileThreads, 0, stream>>>(plan, x, y, sums);
      break;
    }
    default: {  // kRunning
      const Plan plan = MakeGpuPlan(call);
      RunningMeanUnitsKernel<T>
          <<<GridSize(plan.num_units, sm_count), kGpuThreadsPerBlock, 0, stream>>>(plan, x, y);
      break;
    }
  }
  return cudaGetLastError();
}

// A stream: the rest of x as an ordinary call (its first n outputs are then replaced), the stage
// for those n outputs, and the next state; all on `stream`, in this order.
template <typename T>
cudaError_t LaunchStream(const Call& call, cudaStream_t stream, int sm_count, void* scratch,
                         GpuKernel kernel) {
  const StreamStage stage = StageOf(call);
  const int64_t lanes = call.view.outer * call.view.inner;
  if (call.view.steps > 0 && lanes > 0) {
    char* tiles = static_cast<char*>(scratch) + (NeedsStage(call) ? 2 * StageBytes(call) : 0);
    if (const cudaError_t error = Launch<T>(RestCall(call), stream, sm_count, tiles, kernel);
        error != cudaSuccess) {
      return error;
    }
  }
  if (stage.head_steps > 0 && lanes > 0) {
    T* stage_x = static_cast<T*>(scratch);
    T* stage_y = reinterpret_cast<T*>(static_cast<char*>(scratch) + StageBytes(call));
    StageInputsKernel<T><<<GridSize(stage.Elements(), sm_count), kGpuThreadsPerBlock, 0, stream>>>(
        call, stage, stage_x);
    const Call staged = StageCall(call, stage_x, stage_y);
    if (const cudaError_t error = Launch<T>(
            staged, stream, sm_count, static_cast<char*>(scratch) + 2 * StageBytes(call), kernel);
        error != cudaSuccess) {
      return error;
    }
    HeadOutputsKernel<T><<<GridSize(call.view.outer * stage.head_steps * call.view.inner, sm_count),
                           kGpuThreadsPerBlock, 0, stream>>>(call, stage, stage_y);
  }
  NextHistoryKernel<T>
      <<<GridSize(lanes * call.HistorySteps(), sm_count), kGpuThreadsPerBlock, 0, stream>>>(call);
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
      reinterpret_cast<const void*>(&StageInputsKernel<T>),
      reinterpret_cast<const void*>(&HeadOutputsKernel<T>),
      reinterpret_cast<const void*>(&NextHistoryKernel<T>),
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
  cudaError_t error = cudaSuccess;
  for (int k = 0; k < kDTypeCount && error == cudaSuccess; ++k) {
    VisitDType<__half, __nv_bfloat16>(static_cast<DType>(k),
                                      [&](auto type) { error = LoadKernelsOf<decltype(type)>(); });
  }
  return error;
}

GpuStatus LaunchOnGpu(const Call& call, cudaStream_t stream, void* scratch, GpuKernel kernel) {
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
  VisitDType<__half, __nv_bfloat16>(call.dtype, [&](auto type) {
    using T = decltype(type);
    status.error = call.IsStream() ? LaunchStream<T>(call, stream, sm_count, scratch, kernel)
                                   : Launch<T>(call, stream, sm_count, scratch, kernel);
  });
  if (status.error != cudaSuccess) {
    // cudaGetLastError (in Launch) cleared an ordinary launch error; a sticky one stays.
    status.step = cudaPeekAtLastError() != cudaSuccess ? GpuStatus::Step::kStickyAfter
                                                       : GpuStatus::Step::kLaunch;
  }
  return status;
}

}  // namespace causal_moving_avg
