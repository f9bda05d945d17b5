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
  static constexpr bool kOnHost = true;

  absl::Status operator()(::tensorflow::OpKernelContext* ctx, const Call& call) {
    const CPUDevice& device = ctx->eigen_device<CPUDevice>();
    ::tensorflow::Tensor scratch;  // a stream's stage: a clear error if it cannot be allocated
    const int64_t scratch_bytes = CpuScratchBytes(call);
    if (scratch_bytes > 0) {
      TF_RETURN_IF_ERROR(ctx->allocate_temp(::tensorflow::DT_UINT8,
                                            ::tensorflow::TensorShape({scratch_bytes}), &scratch));
    }
    ComputeOnCpu(call, scratch_bytes > 0 ? scratch.flat<uint8_t>().data() : nullptr,
                 device.numThreads(), [&device](int64_t shards, const auto& run_shard) {
                   // Shards are balanced and heavy (ShardCount keeps them large): one task each.
                   const Eigen::TensorOpCost cost(0, 0, 1e9);
                   device.parallelFor(shards, cost,
                                      [&run_shard](Eigen::Index begin, Eigen::Index end) {
                                        for (Eigen::Index shard = begin; shard < end; ++shard)
                                          run_shard(shard);
                                      });
                 });
    return absl::OkStatus();
  }
};

// The CPU kernel takes sequence ids of both types.
constexpr ::tensorflow::DataType kCpuIdTypes[] = {::tensorflow::DT_INT32, ::tensorflow::DT_INT64};

#define CMA_REGISTER_CPU(enumerator, name) \
  CMA_REGISTER_KERNEL_FOR_DTYPE(::tensorflow::DEVICE_CPU, CPUDevice, enumerator, kCpuIdTypes);
CMA_FOR_EACH_DTYPE(CMA_REGISTER_CPU)
#undef CMA_REGISTER_CPU

}  // namespace causal_moving_avg
