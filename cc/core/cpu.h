// The CPU entry point, shared by the TF CPU kernel, the XLA Host handler and the NumPy binding:
// ComputeOnCpu cuts a call into shards of the plan's units and runs them on the binding's threads
// (ComputeUnits per shard), with the output's huge-page hint. Host only. The entry points are
// compiled once, in cpu.cc and cpu_instances.cc (the cma_cpu library every binding links).
#ifndef CAUSAL_MOVING_AVG_CC_CORE_CPU_H_
#define CAUSAL_MOVING_AVG_CC_CORE_CPU_H_

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "cc/core/call.h"
#include "cc/core/numerics.h"
#include "cc/core/plan.h"
#include "cc/core/running_means.h"
#include "cc/core/split_windows.h"
#include "cc/core/stream.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// Shards for `work` (in elements of an ordinary call) on at most `most` workers: as many as
// allowed, but none below kMinShardElements elements, where handing work to another thread costs
// more than it saves; at least one.
constexpr int64_t kMinShardElements = int64_t{1} << 15;
inline int64_t ShardsFor(int64_t work, int64_t most) {
  return Max64(1, Min64(most, work / kMinShardElements));
}

// How many shards a CPU call cuts its plan's units into for `threads` workers.
inline int64_t ShardCount(const Plan& plan, int64_t threads) {
  return ShardsFor(plan.call.Elements(), Min64(threads, plan.num_units));
}

// The units of shard `shard` of `shards`: contiguous and balanced.
inline void ShardUnits(const Plan& plan, int64_t shard, int64_t shards, int64_t* begin,
                       int64_t* end) {
  *begin = plan.num_units * shard / shards;
  *end = plan.num_units * (shard + 1) / shards;
}

// TensorFlow's and XLA's CPU allocators hand large outputs out as fresh pages, and with
// transparent huge pages in "madvise" mode (the common Linux default) their first touch costs one
// fault per 4 KiB: about half of a large call on some hosts. NumPy asks for huge pages on large
// arrays; so do we, for the whole 2 MiB pages inside an output. Only a hint: without THP it does
// nothing.
inline void HintHugePages(void* data, int64_t bytes) {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  if (bytes < static_cast<int64_t>(kHugePage)) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHugePage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// The versions of the CPU core the binary holds: host code is compiled for the x86-64 baseline
// and, on x86-64 with GCC, for AVX2 (twice the width of the float64 arithmetic). Without FMA (not
// part of the "avx2" target) both round every operation identically, so results do not depend on
// the CPU; tests force each version to compare their bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    !defined(__SANITIZE_ADDRESS__)
#define CMA_HAS_AVX2_VERSION 1
#else
#define CMA_HAS_AVX2_VERSION 0
#endif

enum class CpuVersion { kBaseline, kAvx2 };

inline const char* CpuVersionName(CpuVersion version) {
  return version == CpuVersion::kAvx2 ? "avx2" : "baseline";
}

// The versions this binary holds and this CPU can run (cpu.cc).
std::vector<CpuVersion> RunnableCpuVersions();

// The version this process runs: the widest the CPU can run, or the one the environment variable
// CMA_CPU_VERSION names ("baseline", "avx2") if the CPU can run it. Chosen once per process.
CpuVersion ActiveCpuVersion();

// IEEE arithmetic with subnormals for the scope: TensorFlow's and XLA's CPU threads flush them
// to zero (FTZ/DAZ), other callers' threads do not, and the op gives the same bits on every
// thread (tiny float64 values would otherwise lose the compensation of their sums, and means
// below the smallest normal number would read 0).
class ScopedSubnormals {
 public:
#if defined(__x86_64__) || defined(__i386__)
  ScopedSubnormals() : saved_(_mm_getcsr()) {
    _mm_setcsr(saved_ & ~(kFlushToZero | kDenormalsAreZero));
  }
  ~ScopedSubnormals() { _mm_setcsr(saved_); }

 private:
  static constexpr unsigned kFlushToZero = 1u << 15;
  static constexpr unsigned kDenormalsAreZero = 1u << 6;
  const unsigned saved_;
#endif
};

// Units [begin, end) of the plan by split windows (16- or 32-bit units with short windows summed
// directly where that is faster, DirectSumsFor, in float64). A float64 window whose finite values
// overflow a partial sum (values of 2^960 or more) takes its mean from the lane's inputs scaled by
// 2^-64 (RedoOverflowed). `scratch` holds ScratchSumsOf(plan) sums.
inline int64_t ScratchSumsOf(const Plan& plan) {
  const int64_t lanes = plan.span_groups > 0 ? kSpanLanes : plan.unit_lanes;
  return SplitLayoutFor(SummedWindow(plan.call), plan.unit_lanes).ScratchSums(lanes);
}

// One unit: steps [t0, t1) of `lanes` lanes at ux, uy (consecutive steps `stride` apart).
template <typename T>
inline void ComputeLanes(const T* ux, T* uy, int64_t stride, int64_t lanes, int64_t t0, int64_t t1,
                         int64_t summed, const InverseDivisors<double>& divisors,
                         const SplitLayout& layout, SplitSumOf<T>* scratch) {
#if !defined(__CUDA_ARCH__)  // host code (CUDA sources that include this file compile it twice)
  using Sum = SplitSumOf<T>;
  // Direct sums read the unit's lanes and steps as one flat array: all of a row's lanes.
  if (std::is_same_v<Sum, PlainSum> && stride == lanes && DirectSumsFor(lanes, summed)) {
    DirectMeans(ux, uy, t0, t1, summed, divisors, lanes);
  } else {
    SplitWindowMeans(ux, uy, stride, lanes, t0, t1, summed, divisors, layout, scratch);
  }
  if constexpr (kSumMayOverflow<Sum>) {
    for (int64_t l = 0; l < lanes; ++l) {
      if (OverflowedInUnit(ux + l, uy + l, stride, t0, t1, summed)) {
        RedoOverflowed(ux + l, uy + l, stride, t0, t1, summed, divisors);
      }
    }
  }
#endif
}

// A unit of kSpanLanes spans of one lane side by side (UnitRange::spans): steps [t0, t1) of the
// first at x, y, each next span `distance` steps later, by split windows in the lanes of one
// vector; `staging` holds their staged inputs and a block's outputs (SpanLanes).
template <typename T>
inline void SpanLanesMeans(const T* x, T* y, int64_t distance, int64_t t0, int64_t t1,
                           int64_t summed, const InverseDivisors<double>& divisors,
                           const SplitLayout& layout, SplitSumOf<T>* scratch,
                           std::vector<T>* staging) {
#if !defined(__CUDA_ARCH__)  // host code (CUDA sources that include this file compile it twice)
  if constexpr (std::is_same_v<SplitSumOf<T>, PlainSum>) {
    // The ring holds the blocks a block's windows and tails reach back to, and the block.
    int64_t ring_steps = 1;
    while (ring_steps < (layout.ring + 1) * layout.block) ring_steps *= 2;
    staging->resize(kSpanLanes * (ring_steps + layout.block));
    SpanLanes<T> steps{
        x, y, distance, staging->data(), ring_steps, staging->data() + kSpanLanes * ring_steps};
    SplitWindowMeansOf(steps, kSpanLanes, t0, t1, summed, divisors, layout, scratch);
  }
#endif
}

template <typename T>
inline void ComputeUnitRangeWith(const Plan& plan, const T* x, T* y, int64_t begin, int64_t end,
                                 SplitSumOf<T>* scratch) {
  const Call& call = plan.call;
  const int64_t summed = SummedWindow(call);
  const SplitLayout layout = SplitLayoutFor(summed, plan.unit_lanes);
  const auto divisors = DivisorsOf<double>(call);
  std::vector<T> staging;  // units of spans side by side
  for (int64_t unit = begin; unit < end; ++unit) {
    UnitRange r = UnitAt(plan, unit);
    r.t0 = Max64(r.t0, call.first_output);
    if (r.t0 >= r.t1) continue;
    const int64_t stride = call.view.inner;
    const int64_t offset = r.row * call.view.steps * stride + r.lane0;
    if (r.spans > 1) {
      SpanLanesMeans<T>(x + offset, y + offset, plan.span_steps, r.t0, r.t1, summed, divisors,
                        layout, scratch, &staging);
      continue;
    }
    ComputeLanes<T>(x + offset, y + offset, stride, r.lanes, r.t0, r.t1, summed, divisors, layout,
                    scratch);
  }
}

template <typename T>
inline void ComputeUnitRange(const Plan& plan, const T* x, T* y, int64_t begin, int64_t end) {
  std::vector<SplitSumOf<T>> scratch(ScratchSumsOf(plan));
  ComputeUnitRangeWith<T>(plan, x, y, begin, end, scratch.data());
}

// The sequences of a call with ids that start at flat positions [p0, p1) of its [outer, steps]
// (row * steps + step), each a call of its own (a fresh start). A sequence that such a call would
// compute as one unit (all lanes, one span) is that unit, without a plan (one lane in a single
// block: OneBlockMeans), and one lane's short windows take all its sequences in one pass
// (PackedDirectMeans), as do its runs of sequences no longer than kShortWindowMax under longer
// windows: the same bits, less set-up per sequence.
template <typename T, typename Id>
inline void ComputeSequencesFrom(const Call& call, const Id* all_ids, int64_t p0, int64_t p1) {
  std::vector<SplitSumOf<T>> scratch;
  std::vector<double> heads;
  const int64_t inner = call.view.inner, steps = call.view.steps;
  const auto divisors = DivisorsOf<double>(call);
  const auto compute = [&](int64_t row, int64_t begin, int64_t end) {
    const int64_t offset = (row * steps + begin) * inner;
    const int64_t length = end - begin, summed = Min64(call.window, length);
    if (inner <= kMaxUnitLanes && length * inner <= kCpuSpanElements) {
      const SplitLayout layout = SplitLayoutFor(summed, inner);
#if !defined(__CUDA_ARCH__)  // host code (CUDA sources that include this file compile it twice)
      // One lane, split windows of a single block: OneBlockMeans, the same bits.
      if (std::is_same_v<SplitSumOf<T>, PlainSum> && inner == 1 && summed == length &&
          layout.block == length && !DirectSumsFor(1, summed)) {
        if (heads.size() < static_cast<size_t>(length)) heads.resize(length);
        return OneBlockMeans(static_cast<const T*>(call.x) + offset,
                             static_cast<T*>(call.y) + offset, length, divisors, heads.data());
      }
#endif
      const int64_t needed = layout.ScratchSums(inner);
      if (needed <= kSplitScratchSums) {  // else MakeCpuPlan narrows the units
        if (scratch.size() < static_cast<size_t>(needed)) scratch.resize(needed);
        return ComputeLanes<T>(static_cast<const T*>(call.x) + offset,
                               static_cast<T*>(call.y) + offset, inner, inner, 0, length, summed,
                               divisors, layout, scratch.data());
      }
    }
    Call one = call;
    one.view = {1, length, inner};
    one.ids_kind = Call::Ids::kNone;
    one.segment_ids = nullptr;
    const Plan plan = MakeCpuPlan(one);
    const auto needed = static_cast<size_t>(ScratchSumsOf(plan));
    if (scratch.size() < needed) scratch.resize(needed);
    ComputeUnitRangeWith<T>(plan, static_cast<const T*>(call.x) + offset,
                            static_cast<T*>(call.y) + offset, 0, plan.num_units, scratch.data());
  };
  for (int64_t row = p0 / steps; row < call.view.outer && row * steps < p1; ++row) {
    const Id* ids = all_ids + row * steps;
    const int64_t from = Max64(0, p0 - row * steps), to = Min64(steps, p1 - row * steps);
    int64_t begin = from == 0 ? 0 : NextStart(ids, from, steps);
#if !defined(__CUDA_ARCH__)  // host code (CUDA sources that include this file compile it twice)
    // One lane summed directly: every sequence of the range in one pass, the same bits.
    const bool one_lane_direct = std::is_same_v<SplitSumOf<T>, PlainSum> && inner == 1;
    const auto packed_direct = [&](int64_t run_begin, int64_t run_end, int64_t summed) {
      PackedDirectMeans(static_cast<const T*>(call.x) + row * steps,
                        static_cast<T*>(call.y) + row * steps, ids, run_begin, run_end, summed,
                        divisors);
    };
    if (one_lane_direct && DirectSumsFor(1, call.window) && begin < to) {
      packed_direct(begin, to == steps ? steps : NextStart(ids, to, steps), call.window);
      continue;
    }
#endif
    while (begin < to) {
      int64_t end = NextStart(ids, begin + 1, steps);
#if !defined(__CUDA_ARCH__)
      // Under a longer W, one lane's consecutive sequences of at most kShortWindowMax steps are
      // summed directly too (each its DirectMeans), in one pass.
      if (one_lane_direct && end - begin <= kShortWindowMax) {
        end = ShortSequencesEnd(ids, begin, to, steps);
        packed_direct(begin, end, kShortWindowMax);
        begin = end;
        continue;
      }
#endif
      compute(row, begin, end);
      begin = end;
    }
  }
}

template <typename T>
inline void ComputeSequenceRange(const Call& call, int64_t p0, int64_t p1) {
  if (call.ids_kind == Call::Ids::kInt64) {
    return ComputeSequencesFrom<T>(call, static_cast<const int64_t*>(call.segment_ids), p0, p1);
  }
  ComputeSequencesFrom<T>(call, static_cast<const int32_t*>(call.segment_ids), p0, p1);
}

// Whether a stream's head is summed straight from its state (StreamHeadMeans) rather than staged:
// for 16- and 32-bit inputs (float64's compensated sums and overflow handling stay with the
// stage) where W sums per output cost about what staging W - 1 + n steps does: a few steps (a
// step loop), or short windows.
constexpr int64_t kDirectHeadStepsMax = 4;
inline bool HeadSummedDirectly(const Call& call) {
  const int64_t head = Min64(call.HistorySteps(), call.view.steps);
  return call.dtype != DType::kFloat64 &&
         (head <= kDirectHeadStepsMax || call.window <= kShortWindowMax);
}

// Each version of the core: `flatten` inlines the whole unit into it, so all of it is compiled
// for that version's target.
template <typename T>
__attribute__((flatten)) void ComputeUnitsBaseline(const Plan& plan, const T* x, T* y,
                                                   int64_t begin, int64_t end) {
  ComputeUnitRange<T>(plan, x, y, begin, end);
}
template <typename T>
__attribute__((flatten)) void ComputeSequencesBaseline(const Call& call, int64_t p0, int64_t p1) {
  ComputeSequenceRange<T>(call, p0, p1);
}
template <typename T>
__attribute__((flatten)) void StreamHeadBaseline(const Call& call, int64_t row0, int64_t row1) {
#if !defined(__CUDA_ARCH__)
  StreamHeadMeans<T>(call, row0, row1);
#endif
}

#if CMA_HAS_AVX2_VERSION
template <typename T>
__attribute__((target("avx2"), flatten)) void ComputeUnitsAvx2(const Plan& plan, const T* x, T* y,
                                                               int64_t begin, int64_t end) {
  ComputeUnitRange<T>(plan, x, y, begin, end);
}
template <typename T>
__attribute__((target("avx2"), flatten)) void ComputeSequencesAvx2(const Call& call, int64_t p0,
                                                                   int64_t p1) {
  ComputeSequenceRange<T>(call, p0, p1);
}
template <typename T>
__attribute__((target("avx2"), flatten)) void StreamHeadAvx2(const Call& call, int64_t row0,
                                                             int64_t row1) {
  StreamHeadMeans<T>(call, row0, row1);
}
#endif

// Computes units [begin, end) on the calling thread, in the active version.
template <typename T>
void ComputeUnits(const Plan& plan, const T* x, T* y, int64_t begin, int64_t end) {
  const ScopedSubnormals subnormals;
#if CMA_HAS_AVX2_VERSION
  if (ActiveCpuVersion() == CpuVersion::kAvx2) return ComputeUnitsAvx2<T>(plan, x, y, begin, end);
#endif
  ComputeUnitsBaseline<T>(plan, x, y, begin, end);
}

// Computes the sequences starting at flat positions [p0, p1) on the calling thread, in the active
// version.
template <typename T>
void ComputeSequences(const Call& call, int64_t p0, int64_t p1) {
  const ScopedSubnormals subnormals;
#if CMA_HAS_AVX2_VERSION
  if (ActiveCpuVersion() == CpuVersion::kAvx2) return ComputeSequencesAvx2<T>(call, p0, p1);
#endif
  ComputeSequencesBaseline<T>(call, p0, p1);
}

// A stream's stage on the CPU: up to kStageSlices rows staged at once, all their sums on every
// thread; with more rows, each of at most kStageSlices shards stages one row at a time in a slice
// of its own, which stays in cache (staging every row costs a pass through memory and fresh pages).
constexpr int64_t kStageSlices = 16;
inline int64_t StagedRowsHeld(const Call& call) { return Min64(call.view.outer, kStageSlices); }

// Host memory a CPU call needs besides its inputs and outputs, in bytes: a stream's staged rows
// (stream.h), their inputs and outputs.
inline int64_t CpuScratchBytes(const Call& call) {
  if (!NeedsStage(call) || HeadSummedDirectly(call)) return 0;
  const Geometry stage = StageOf(call).view;
  return 2 * StagedRowsHeld(call) * stage.steps * stage.inner * SizeOf(call.dtype);
}

// A stream's head, rows [row0, row1), on the calling thread, in the active version.
template <typename T>
void ComputeStreamHead(const Call& call, int64_t row0, int64_t row1) {
  const ScopedSubnormals subnormals;
#if CMA_HAS_AVX2_VERSION
  if (ActiveCpuVersion() == CpuVersion::kAvx2) return StreamHeadAvx2<T>(call, row0, row1);
#endif
  StreamHeadBaseline<T>(call, row0, row1);
}

// The compiled core (cc/core/cpu_instances.cc): the three entry points above for each dtype's host
// type, compiled once and linked by every binding instead of being instantiated in each of them.
// A binding's own 16-bit types (Eigen's, CUDA's) have these layouts and round as these do
// (core_test checks HostHalf against the compiler's _Float16, HostBfloat16 against round to nearest
// even), so one instantiation serves them all.
template <DType kDType>
using HostTypeOf = CppTypeOf<HostHalf, HostBfloat16, kDType>;
#define CMA_CPU_ENTRY_POINTS(prefix, T)                                              \
  prefix template void ComputeUnits<T>(const Plan&, const T*, T*, int64_t, int64_t); \
  prefix template void ComputeSequences<T>(const Call&, int64_t, int64_t);           \
  prefix template void ComputeStreamHead<T>(const Call&, int64_t, int64_t);
#define CMA_EXTERN_ENTRY_POINTS(enumerator, name) \
  CMA_CPU_ENTRY_POINTS(extern, HostTypeOf<DType::enumerator>)
CMA_FOR_EACH_DTYPE(CMA_EXTERN_ENTRY_POINTS)
#undef CMA_EXTERN_ENTRY_POINTS

// A reference to a callable, for the shard runners below: the bindings pass lambdas, the core
// calls them through one pointer, and nothing is copied or allocated.
template <typename Signature>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit, as a lambda argument
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

// run_shards(shards, run_shard) runs run_shard(k) for every k in [0, shards), on whatever threads
// the binding has (TensorFlow's or XLA's pool, std::threads, or the calling thread alone), and
// returns when all have run.
using RunShard = FunctionRef<void(int64_t)>;
using RunShards = FunctionRef<void(int64_t, RunShard)>;

// Computes a checked, non-empty call on the CPU: the one sharding routine of every binding. The
// plan's units are cut into at most `threads` shards (ShardCount), run by `run_shards`. Unit
// boundaries do not depend on the shards, so every binding gives the same bits. `scratch` holds
// CpuScratchBytes(call) bytes (null when that is 0).
void ComputeOnCpu(const Call& call, void* scratch, int64_t threads, RunShards run_shards);

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_CPU_H_
