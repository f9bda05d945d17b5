// The CUDA kernels of CausalMovingAvg and their launcher, free of TensorFlow: the TF GPU kernel
// and the standalone GPU harness (cc/harness/) call the same LaunchCausalMovingAvgOnGpu.
#ifndef CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_GPU_CU_H_
#define CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_GPU_CU_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "cc/kernels/causal_moving_avg_core.h"

namespace causal_moving_avg {

constexpr int kGpuThreadsPerBlock = 256;

// Direct summation, one thread per output (grid-stride); see DirectMeanAt.
template <typename T>
__global__ void DirectMeanKernel(Geometry geometry, int64_t window, Edge edge,
                                 const T* __restrict__ x, T* __restrict__ y) {
  const int64_t count = geometry.outer * geometry.steps * geometry.inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    y[i] = DirectMeanAt(geometry, window, edge, x, i);
  }
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

// Enough blocks to fill every SM, the rest covered by the grid-stride loops.
inline unsigned GridSize(int64_t work_items, int sm_count) {
  const int64_t wanted = CeilDiv(work_items, kGpuThreadsPerBlock);
  const int64_t resident = static_cast<int64_t>(sm_count) * (2048 / kGpuThreadsPerBlock) * 4;
  return static_cast<unsigned>(Max64(1, Min64(wanted, resident)));
}

// Enqueues the op on `stream` for a non-empty input (device pointers) and returns the launch
// status. `sm_count` is the device's multiprocessor count.
template <typename T>
cudaError_t LaunchCausalMovingAvgOnGpu(cudaStream_t stream, int sm_count, Geometry geometry,
                                       int64_t window, Edge edge, const T* x, T* y) {
  if (GpuUsesDirectSum(geometry, window)) {
    const int64_t count = geometry.outer * geometry.steps * geometry.inner;
    DirectMeanKernel<T><<<GridSize(count, sm_count), kGpuThreadsPerBlock, 0, stream>>>(
        geometry, window, edge, x, y);
  } else {
    const Plan plan = MakeGpuPlan(geometry, window, edge);
    RunningMeanUnitsKernel<T>
        <<<GridSize(plan.num_units, sm_count), kGpuThreadsPerBlock, 0, stream>>>(plan, x, y);
  }
  return cudaGetLastError();
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_KERNELS_CAUSAL_MOVING_AVG_GPU_CU_H_
