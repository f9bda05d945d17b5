// The CPU kernel: the core's one sharding routine (ComputeOnCpu) on TensorFlow's intra-op pool.
#define EIGEN_USE_THREADS

#include <cstdint>

#include "cc/core/call.h"
#include "cc/core/cpu.h"
#include "cc/kernels/causal_moving_avg_op.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace causal_moving_avg {

using CPUDevice = Eigen::ThreadPoolDevice;

template <>
struct LaunchCausalMovingAvg<CPUDevice> {
  absl::Status operator()(::tensorflow::OpKernelContext* ctx, const Call& call) {
    const CPUDevice& device = ctx->eigen_device<CPUDevice>();
    ComputeOnCpu<TfTypeOf<DType::kFloat16>, TfTypeOf<DType::kBfloat16>>(
        call, device.numThreads(), [&device](int64_t shards, const auto& run_shard) {
          // Shards are balanced and heavy (ShardCount keeps them large): one task each.
          const Eigen::TensorOpCost cost(0, 0, 1e9);
          device.parallelFor(shards, cost, [&run_shard](Eigen::Index begin, Eigen::Index end) {
            for (Eigen::Index shard = begin; shard < end; ++shard) run_shard(shard);
          });
        });
    return absl::OkStatus();
  }
};

#define CMA_REGISTER_CPU(enumerator, name) \
  CMA_REGISTER_KERNEL_FOR_DTYPE(::tensorflow::DEVICE_CPU, CPUDevice, enumerator);
CMA_FOR_EACH_DTYPE(CMA_REGISTER_CPU)
#undef CMA_REGISTER_CPU

}  // namespace causal_moving_avg
