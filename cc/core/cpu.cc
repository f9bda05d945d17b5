// The compiled CPU core's entry point (cpu.h): the version check, the sharding routine every
// binding calls, and a stream's staging around it. The per-dtype entry points it calls are
// compiled in cpu_instances.cc.
#include "cc/core/cpu.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace causal_moving_avg {

std::vector<CpuVersion> RunnableCpuVersions() {
  std::vector<CpuVersion> versions = {CpuVersion::kBaseline};
#if CMA_HAS_AVX2_VERSION
  if (__builtin_cpu_supports("avx2")) versions.push_back(CpuVersion::kAvx2);
#endif
  return versions;
}

CpuVersion ActiveCpuVersion() {
  static const CpuVersion active = [] {
    const std::vector<CpuVersion> runnable = RunnableCpuVersions();
    if (const char* wanted = std::getenv("CMA_CPU_VERSION")) {
      for (const CpuVersion version : runnable) {
        if (std::strcmp(wanted, CpuVersionName(version)) == 0) return version;
      }
    }
    return runnable.back();
  }();
  return active;
}

namespace {

// Packed sequences: each row cut into its sequences (LaneHistory's rule), each sequence an
// ordinary call of its own (a fresh start: the window cut at its first step, "partial" counting
// from there). The [outer, steps] positions are cut into one contiguous range per thread, which
// finds and computes the sequences starting in it, so both the search and the sums run in
// parallel. Which thread computes a sequence does not change its bits.
void ComputeSequencesOnCpu(const Call& call, int64_t threads, RunShards run_shards) {
  const int64_t positions = call.view.outer * call.view.steps;
  const int64_t shards = ShardsFor(call.Elements(), threads);
  VisitDType<HostHalf, HostBfloat16>(call.dtype, [&](auto type) {
    using T = decltype(type);
    HintHugePages(call.y, call.Elements() * static_cast<int64_t>(sizeof(T)));
    const auto run_shard = [&](int64_t shard) {
      ComputeSequences<T>(call, positions * shard / shards, positions * (shard + 1) / shards);
    };
    if (shards <= 1) return run_shard(0);
    run_shards(shards, run_shard);
  });
}

// A stream (stream.h): an ordinary call for x's steps after the head, the head's outputs from the
// stage or summed straight from the state (HeadSummedDirectly), and the next state; every copy a
// row at a time.
void ComputeStreamOnCpu(const Call& call, void* scratch, int64_t threads, RunShards run_shards) {
  const int64_t size = SizeOf(call.dtype), inner = call.view.inner;
  const auto* x = static_cast<const char*>(call.x);
  const auto* history = static_cast<const char*>(call.history);
  const int64_t history_row = call.HistorySteps() * inner * size;
  const int64_t x_row = call.view.steps * inner * size;
  const StreamStage stage = StageOf(call);
  // The output's and the stage's huge-page hints come before anything touches them (a 2 MiB range
  // that holds a touched 4 KiB page no longer gets a huge page, and the head touches every row),
  // and the rest of x first: its shards take the output's first touches on every thread.
  HintHugePages(call.y, call.Elements() * size);
  HintHugePages(scratch, CpuScratchBytes(call));
  // The rows cut into `shards` contiguous ranges, run_range(shard, row0, row1) for each on the
  // call's threads.
  const int64_t rows = call.view.outer;
  const auto by_rows = [&](int64_t shards, auto run_range) {
    const auto run_shard = [&](int64_t shard) {
      run_range(shard, rows * shard / shards, rows * (shard + 1) / shards);
    };
    if (shards <= 1) return run_shard(0);
    run_shards(shards, run_shard);
  };
  // Copies of `elements` in all, by rows (they also take the first touches of what they write).
  const auto copy_rows = [&](int64_t elements, auto copy_row) {
    by_rows(ShardsFor(elements, Min64(threads, rows)), [&](int64_t, int64_t row0, int64_t row1) {
      for (int64_t row = row0; row < row1; ++row) copy_row(row);
    });
  };
  if (call.view.outer * inner > 0 && stage.head_steps < call.view.steps) {
    ComputeOnCpu(RestCall(call), nullptr, threads, run_shards);
  }
  if (call.view.outer * inner > 0 && stage.head_steps > 0 && HeadSummedDirectly(call)) {
    // Its additions, vectorised, cost about an eighth of an element of an ordinary call each.
    const int64_t work = rows * inner * stage.head_steps * call.window / 8;
    VisitDType<HostHalf, HostBfloat16>(call.dtype, [&](auto type) {
      using T = decltype(type);
      by_rows(ShardsFor(work, Min64(threads, rows)), [&call](int64_t, int64_t row0, int64_t row1) {
        ComputeStreamHead<T>(call, row0, row1);
      });
    });
  } else if (call.view.outer * inner > 0 && stage.head_steps > 0) {
    const int64_t head_row = stage.head_steps * inner * size, stage_row = history_row + head_row;
    auto* staged = static_cast<char*>(scratch);
    auto* y = static_cast<char*>(call.y);
    const auto stage_in = [&](int64_t row, char* to) {
      std::memcpy(to, history + row * history_row, history_row);
      std::memcpy(to + history_row, x + row * x_row, head_row);
    };
    if (rows <= kStageSlices) {
      char* stage_y = staged + rows * stage_row;
      copy_rows(stage.Elements(), [&](int64_t row) { stage_in(row, staged + row * stage_row); });
      ComputeOnCpu(StageCall(call, staged, stage_y), nullptr, threads, run_shards);
      copy_rows(rows * stage.head_steps * inner, [&](int64_t row) {
        std::memcpy(y + row * x_row, stage_y + row * stage_row + history_row, head_row);
      });
    } else {
      // One row at a time per shard, in the shard's slice (StagedRowsHeld).
      Call one_row = call;
      one_row.view.outer = 1;
      const int64_t shards = ShardsFor(stage.Elements(), Min64(threads, kStageSlices));
      by_rows(shards, [&](int64_t shard, int64_t row0, int64_t row1) {
        char* slice_x = staged + 2 * shard * stage_row;
        char* slice_y = slice_x + stage_row;
        for (int64_t row = row0; row < row1; ++row) {
          stage_in(row, slice_x);
          ComputeOnCpu(StageCall(one_row, slice_x, slice_y), nullptr, 1, run_shards);
          std::memcpy(y + row * x_row, slice_y + history_row, head_row);
        }
      });
    }
  }
  // The next state: the last H inputs of history then x; then the count (read above).
  auto* next = static_cast<char*>(call.next_history);
  const int64_t from_history = Max64(0, history_row - x_row);
  if (history_row > 0) {
    copy_rows(rows * call.HistorySteps() * inner, [&](int64_t row) {
      char* out = next + row * history_row;
      if (from_history > 0) {
        std::memcpy(out, history + row * history_row + (history_row - from_history), from_history);
      }
      if (history_row > from_history) {
        std::memcpy(out + from_history, x + row * x_row + (x_row - (history_row - from_history)),
                    history_row - from_history);
      }
    });
  }
  *call.next_seen = NextSeen(call);
}

}  // namespace

// The sharding routine (cpu.h).
void ComputeOnCpu(const Call& call, void* scratch, int64_t threads, RunShards run_shards) {
  if (call.IsStream()) return ComputeStreamOnCpu(call, scratch, threads, run_shards);
  if (call.HasSegments()) return ComputeSequencesOnCpu(call, threads, run_shards);
  const Plan plan = MakeCpuPlan(call);
  VisitDType<HostHalf, HostBfloat16>(call.dtype, [&](auto type) {
    using T = decltype(type);
    const T* x = static_cast<const T*>(call.x);
    T* y = static_cast<T*>(call.y);
    HintHugePages(y, call.Elements() * static_cast<int64_t>(sizeof(T)));
    const int64_t shards = ShardCount(plan, threads);
    if (shards <= 1) return ComputeUnits<T>(plan, x, y, 0, plan.num_units);
    run_shards(shards, [&plan, x, y, shards](int64_t shard) {
      int64_t begin, end;
      ShardUnits(plan, shard, shards, &begin, &end);
      ComputeUnits<T>(plan, x, y, begin, end);
    });
  });
}

}  // namespace causal_moving_avg
