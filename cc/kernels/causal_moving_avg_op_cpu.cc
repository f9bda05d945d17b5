// The CPU kernel: shards the core's independent units over TensorFlow's intra-op thread pool.
#define EIGEN_USE_THREADS

#include <cstdint>

#include "cc/core/cpu.h"
#include "cc/core/plan.h"
#include "cc/kernels/causal_moving_avg_op.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace causal_moving_avg {

using CPUDevice = Eigen::ThreadPoolDevice;

template <typename T>
struct LaunchCausalMovingAvg<CPUDevice, T> {
  absl::Status operator()(::tensorflow::OpKernelContext* ctx, Geometry geometry, int64_t window,
                          Edge edge, const T* x, T* y) {
    const Plan plan = MakeCpuPlan(geometry, window, edge);
    HintHugePages(y, geometry.outer * geometry.steps * geometry.inner * sizeof(T));
    // Per unit: each input read about twice (entering and leaving the window), each output
    // written once, a few flops per element; Eigen turns this into a shard size.
    const double elements = static_cast<double>(plan.segment_steps * plan.unit_lanes);
    const Eigen::TensorOpCost cost(2 * elements * sizeof(T), elements * sizeof(T), 4 * elements);
    ctx->eigen_device<CPUDevice>().parallelFor(plan.num_units, cost,
                                               [&plan, x, y](Eigen::Index begin, Eigen::Index end) {
                                                 ComputeUnits<T>(plan, x, y, begin, end);
                                               });
    return absl::OkStatus();
  }
};

#define CMA_REGISTER_CPU(enumerator, name) \
  CMA_REGISTER_KERNEL_FOR_DTYPE(::tensorflow::DEVICE_CPU, CPUDevice, enumerator);
CMA_FOR_EACH_DTYPE(CMA_REGISTER_CPU)
#undef CMA_REGISTER_CPU

}  // namespace causal_moving_avg
