// The XLA "Host" handler: runs the CPU core on XLA's buffers, spread over XLA's intra-op thread
// pool. The units and their boundaries are the TF kernel's, so the bits are the eager op's.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "Eigen/Core"
#include "cc/kernels/causal_moving_avg_core.h"
#include "cc/xla/custom_call.h"
#include "xla/ffi/api/ffi.h"

namespace causal_moving_avg {
namespace {

namespace ffi = ::xla::ffi;

// Runs the plan's shards on the calling thread and on pool tasks that claim shards as they
// start. The caller waits only for claimed shards to finish, and runs any that no task has
// claimed itself, so it never waits on a pool that is busy (or is the caller's own pool). A task
// that starts after the call returned finds nothing to claim and touches no buffer.
template <typename T>
void ComputeOnPool(ffi::ThreadPool& pool, const Plan& plan, const T* x, T* y) {
  // Shards are claimed as threads come free, so several per thread even out the load whether or
  // not the calling thread is one of the pool's.
  const int64_t shards = ShardCount(plan, 4 * pool.num_threads());
  if (shards <= 1) {
    ComputeUnits<T>(plan, x, y, 0, plan.num_units);
    return;
  }
  struct Progress {
    std::atomic<int64_t> next{0};
    int64_t done = 0;
    std::mutex mutex;
    std::condition_variable all_done;
  };
  const auto progress = std::make_shared<Progress>();
  const auto work = [progress, plan, x, y, shards] {
    for (int64_t shard; (shard = progress->next.fetch_add(1)) < shards;) {
      int64_t begin, end;
      ShardUnits(plan, shard, shards, &begin, &end);
      ComputeUnits<T>(plan, x, y, begin, end);
      std::lock_guard<std::mutex> lock(progress->mutex);
      if (++progress->done == shards) progress->all_done.notify_all();
    }
  };
  for (int64_t k = 1; k < shards; ++k) {
    auto task = work;
    pool.Schedule(std::move(task));
  }
  work();
  std::unique_lock<std::mutex> lock(progress->mutex);
  progress->all_done.wait(lock, [&] { return progress->done == shards; });
}

ffi::Error HostCall(ffi::ThreadPool pool, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                    ffi::Result<ffi::AnyBuffer> /*scratch: the GPU's only*/, int64_t window,
                    int32_t edge, int64_t outer, int64_t steps, int64_t inner) {
  const Geometry geometry{outer, steps, inner};
  const std::string problem = CheckXlaCall(geometry, static_cast<int64_t>(x.element_count()),
                                           static_cast<int64_t>(y->element_count()), window, edge);
  if (!problem.empty()) return ffi::Error::InvalidArgument("CausalMovingAvg: " + problem);
  if (x.element_count() == 0) return ffi::Error::Success();
  const Plan plan = MakeCpuPlan(geometry, window, static_cast<Edge>(edge));
  HintHugePages(y->untyped_data(), static_cast<int64_t>(y->size_bytes()));
  switch (x.element_type()) {
    case ffi::DataType::F16:
      ComputeOnPool(pool, plan, x.reinterpret_data<Eigen::half>(),
                    y->reinterpret_data<Eigen::half>());
      break;
    case ffi::DataType::BF16:
      ComputeOnPool(pool, plan, x.reinterpret_data<Eigen::bfloat16>(),
                    y->reinterpret_data<Eigen::bfloat16>());
      break;
    case ffi::DataType::F32:
      ComputeOnPool(pool, plan, x.reinterpret_data<float>(), y->reinterpret_data<float>());
      break;
    case ffi::DataType::F64:
      ComputeOnPool(pool, plan, x.reinterpret_data<double>(), y->reinterpret_data<double>());
      break;
    default:
      return ffi::Error::InvalidArgument(
          "CausalMovingAvg: x must be float16, bfloat16, float32 or float64");
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(kHostHandler, HostCall,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("window")
                                  .Attr<int32_t>("edge")
                                  .Attr<int64_t>("outer")
                                  .Attr<int64_t>("steps")
                                  .Attr<int64_t>("inner"));

const bool kRegistered = (RegisterXlaHandler(kXlaHostPlatform, kHostHandler), true);

}  // namespace
}  // namespace causal_moving_avg
