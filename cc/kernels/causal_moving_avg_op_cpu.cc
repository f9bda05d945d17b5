// The CPU kernel: shards the core's independent units over TensorFlow's intra-op thread pool.
#define EIGEN_USE_THREADS

#include <sys/mman.h>

#include <cstdint>

#include "cc/kernels/causal_moving_avg_core.h"
#include "cc/kernels/causal_moving_avg_op.h"
#include "tensorflow/core/framework/register_types.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace causal_moving_avg {

using CPUDevice = Eigen::ThreadPoolDevice;

// TensorFlow's CPU allocator hands large outputs out as fresh pages, and with transparent huge
// pages in "madvise" mode (the common Linux default) their first touch costs one fault per 4 KiB:
// about half of a large call here. NumPy asks for huge pages on large arrays; so do we, for the
// whole 2 MiB pages inside our output. Only a hint: without THP it does nothing.
void HintHugePages(void* data, int64_t bytes) {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  if (bytes < static_cast<int64_t>(kHugePage)) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHugePage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

template <typename T>
struct LaunchCausalMovingAvg<CPUDevice, T> {
  absl::Status operator()(::tensorflow::OpKernelContext* ctx, Geometry geometry, int64_t window,
                          Edge edge, const T* x, T* y) {
    const Plan plan = MakeCpuPlan(geometry, window, edge);
    HintHugePages(y, geometry.outer * geometry.steps * geometry.inner * sizeof(T));
    // Per unit: each input read about twice (entering and leaving the window), each output
    // written once, a few flops per element; Eigen turns this into a shard size.
    const double elements = static_cast<double>(plan.block_steps * plan.lane_tile);
    const Eigen::TensorOpCost cost(2 * elements * sizeof(T), elements * sizeof(T), 4 * elements);
    ctx->eigen_device<CPUDevice>().parallelFor(plan.num_units, cost,
                                               [&plan, x, y](Eigen::Index begin, Eigen::Index end) {
                                                 ComputeUnits<T>(plan, x, y, begin, end);
                                               });
    return absl::OkStatus();
  }
};

#define CMA_REGISTER_CPU(T) CMA_REGISTER_KERNEL(::tensorflow::DEVICE_CPU, CPUDevice, T);
TF_CALL_half(CMA_REGISTER_CPU);
TF_CALL_bfloat16(CMA_REGISTER_CPU);
TF_CALL_float(CMA_REGISTER_CPU);
TF_CALL_double(CMA_REGISTER_CPU);
#undef CMA_REGISTER_CPU

}  // namespace causal_moving_avg
