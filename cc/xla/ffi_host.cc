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
#include "cc/xla/custom_call.h"
#include "cc/xla/ffi_handler.h"
#include "xla/ffi/api/ffi.h"

namespace causal_moving_avg {
namespace {

namespace ffi = ::xla::ffi;

// Runs shards [0, shards) on the calling thread and on pool tasks that claim shards as they
// start. The caller waits only for claimed shards to finish, and runs any that no task has
// claimed itself, so it never waits on a pool that is busy (or is the caller's own pool). A task
// that starts after the call returned finds nothing to claim and touches no buffer.
void RunShardsOnPool(ffi::ThreadPool& pool, int64_t shards, RunShard run_shard) {
  struct Progress {
    std::atomic<int64_t> next{0};
    int64_t done = 0;
    std::mutex mutex;
    std::condition_variable all_done;
  };
  const auto progress = std::make_shared<Progress>();
  const auto work = [progress, run_shard, shards] {
    for (int64_t shard; (shard = progress->next.fetch_add(1)) < shards;) {
      run_shard(shard);
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

ffi::Error HostCall(ffi::ThreadPool pool, ffi::AnyBuffer x, ffi::AnyBuffer history,
                    ffi::AnyBuffer seen, ffi::AnyBuffer ids, ffi::Result<ffi::AnyBuffer> y,
                    ffi::Result<ffi::AnyBuffer> next_history, ffi::Result<ffi::AnyBuffer> next_seen,
                    ffi::Result<ffi::AnyBuffer> scratch, XlaCallAttributes attributes) {
  Call call;
  XlaBuffers buffers{x, history, seen, ids, y, next_history, next_seen, scratch};
  if (ffi::Error error = ReadXlaCall(buffers, attributes, &call); error.failure()) return error;
  if (call.Elements() == 0 && !call.IsStream()) return ffi::Error::Success();
  if (call.IsStream() && *call.seen < 0) {
    return ffi::Error::InvalidArgument(
        "CausalMovingAvg: the state's step count must be >= 0, got " + std::to_string(*call.seen));
  }
  if (static_cast<int64_t>(scratch->size_bytes()) < CpuScratchBytes(call)) {
    return ffi::Error::Internal("CausalMovingAvg: XLA's scratch buffer is smaller than the stage");
  }
  // Shards are claimed as threads come free, so several per thread even out the load whether or
  // not the calling thread is one of the pool's.
  ComputeOnCpu(
      call, scratch->untyped_data(), 4 * pool.num_threads(),
      [&pool](int64_t shards, RunShard run_shard) { RunShardsOnPool(pool, shards, run_shard); });
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(kHostHandler, HostCall,
                              BindCustomCall(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>()));

const bool kRegistered = (RegisterXlaHandler(kXlaHostPlatform, kHostHandler), true);

}  // namespace
}  // namespace causal_moving_avg
