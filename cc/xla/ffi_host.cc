// The XLA "Host" handler: runs the CPU core on XLA's buffers, spread over XLA's intra-op thread
// pool. The units and their boundaries are the TF kernel's, so the bits are the eager op's.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "cc/core/cpu.h"
#include "cc/core/plan.h"
#include "cc/kernels/tf_types.h"
#include "cc/xla/custom_call.h"
#include "cc/xla/ffi_handler.h"
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
  XlaCall call{};
  if (ffi::Error error = ReadXlaCall(x, *y, window, edge, outer, steps, inner, &call);
      error.failure()) {
    return error;
  }
  if (x.element_count() == 0) return ffi::Error::Success();
  const Plan plan = MakeCpuPlan(call.geometry, call.window, call.edge);
  HintHugePages(y->untyped_data(), static_cast<int64_t>(y->size_bytes()));
  // The TF CPU kernel's types, so the same instantiations of the core run.
  switch (call.dtype) {
#define CMA_COMPUTE(enumerator, name)                                            \
  case DType::enumerator:                                                        \
    ComputeOnPool(pool, plan, x.reinterpret_data<TfTypeOf<DType::enumerator>>(), \
                  y->reinterpret_data<TfTypeOf<DType::enumerator>>());           \
    break;
    CMA_FOR_EACH_DTYPE(CMA_COMPUTE)
#undef CMA_COMPUTE
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(kHostHandler, HostCall,
                              BindCustomCall(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>()));

const bool kRegistered = (RegisterXlaHandler(kXlaHostPlatform, kHostHandler), true);

}  // namespace
}  // namespace causal_moving_avg
