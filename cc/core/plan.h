// How the work is cut into independent units: (row, span of steps, group of lanes). Span
// boundaries depend only on the shape and the window, never on the number of threads, and every
// unit restarts its sums from the input ("re-anchors"), so results are bitwise identical however
// units are spread over threads, and rounding cannot drift past one span.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_PLAN_H_
#define CAUSAL_MOVING_AVG_CC_CORE_PLAN_H_

#include <cmath>
#include <cstdint>

#include "cc/core/call.h"
#include "cc/core/cpu_fast_paths.h"
#include "cc/core/numerics.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// Spans of one lane that a CPU unit runs side by side, one per vector lane (split_windows.h).
constexpr int64_t kSpanLanes = 4;

struct Plan {
  Call call;                    // what is computed (its view, window, edge, optional inputs)
  int64_t span_steps;           // steps per span (the last of a row may be shorter)
  int64_t unit_lanes;           // lanes per unit (the last group of a row may be narrower)
  int64_t spans_per_row;        // ceil(steps / span_steps)
  int64_t lane_groups_per_row;  // ceil(inner / unit_lanes)
  // Units per row that hold kSpanLanes spans side by side (CPU, one lane: SpanGroupsFor), 0 else.
  int64_t span_groups = 0;
  int64_t num_units;  // outer * UnitsPerRow()

  CMA_HOST_DEVICE int64_t UnitsPerRow() const {
    return spans_per_row * lane_groups_per_row - (kSpanLanes - 1) * span_groups;
  }
};

// Most lanes one CPU unit carries; bounds the accumulator array a unit keeps on its stack.
constexpr int64_t kMaxUnitLanes = 256;
// Elements per CPU span: enough to amortise the re-anchoring and the per-unit set-up.
constexpr int64_t kCpuSpanElements = 1 << 15;
// Steps per GPU span at least (one thread runs one unit: short spans, many threads).
constexpr int64_t kGpuMinSpanSteps = 64;
// Units a GPU plan keeps at least, where spans of kGpuMinSpanSteps allow it: spans of 4W on few
// lanes leave too few threads to fill a GPU, which costs more than re-anchoring shorter spans
// (compared on an H200: benchmarks/results/2026-12-04-gpu-h200.md).
constexpr int64_t kGpuMinUnits = int64_t{1} << 15;

// `max_unit_lanes` is how many lanes one unit advances together: up to kMaxUnitLanes on the CPU
// (SIMD over contiguous channels), 1 on the GPU (one thread per lane). A span spans at least
// `min_span_steps` steps. Requires steps, inner >= 1.
inline Plan MakePlan(const Call& call, int64_t max_unit_lanes, int64_t min_span_steps) {
  const Geometry& geometry = call.view;
  Plan plan;
  plan.call = call;
  plan.unit_lanes = Min64(geometry.inner, max_unit_lanes);
  // Re-anchoring a span reads up to W earlier inputs; spans of at least 4W keep that below
  // a quarter of the span's own reads, so the cost per output does not grow with W.
  const int64_t effective_window = Min64(call.window, geometry.steps);
  plan.span_steps = Min64(geometry.steps, Max64(min_span_steps, 4 * effective_window));
  plan.spans_per_row = CeilDiv(geometry.steps, plan.span_steps);
  plan.lane_groups_per_row = CeilDiv(geometry.inner, plan.unit_lanes);
  plan.num_units = geometry.outer * plan.spans_per_row * plan.lane_groups_per_row;
  return plan;
}

// The GPU's plan for its running-sum kernel: one lane per unit, spans of MakePlan's length but
// short enough to leave kGpuMinUnits units (not below kGpuMinSpanSteps).
inline Plan MakeGpuPlan(const Call& call) {
  Plan plan = MakePlan(call, /*max_unit_lanes=*/1, kGpuMinSpanSteps);
  const int64_t lanes = call.view.outer * call.view.inner;
  if (plan.num_units < kGpuMinUnits && lanes > 0) {
    const int64_t spans_wanted = CeilDiv(kGpuMinUnits, lanes);
    const int64_t span = Max64(kGpuMinSpanSteps, CeilDiv(call.view.steps, spans_wanted));
    if (span < plan.span_steps) {
      plan.span_steps = span;
      plan.spans_per_row = CeilDiv(call.view.steps, span);
      plan.num_units = call.view.outer * plan.spans_per_row * plan.lane_groups_per_row;
    }
  }
  return plan;
}

// Steps per block of the split windows (split_windows.h): the tails of a block of all of a
// unit's lanes stay in L2 (about kSplitBlockElements), a block spans at most kSplitBlock steps
// unless the window is so long that summing its whole blocks for every block would cost more
// than an eighth of an addition per output, and never more than the window.
constexpr int64_t kSplitBlock = 256;
constexpr int64_t kSplitBlockElements = 16384;

// How a unit is cut for its split windows: B steps per block, and the totals of the last `ring`
// blocks kept per lane (every whole block a window holds, and the block being finished).
struct SplitLayout {
  int64_t block;
  int64_t ring;

  // The sums a unit of `lanes` lanes needs: two blocks of tails, the totals, and per lane the
  // head and two middle sums; a single lane also stages a block's inputs and heads (float64).
  int64_t ScratchSums(int64_t lanes) const {
    return (2 * (block + 1) + ring + 3) * lanes + 2 * block;
  }
};

// `window` is the summed window Wc = min(W, steps); `lanes` the plan's lanes per unit.
inline SplitLayout SplitLayoutFor(int64_t window, int64_t lanes) {
  const int64_t for_cache = Max64(16, Min64(kSplitBlock, kSplitBlockElements / Max64(1, lanes)));
  const auto for_long =
      static_cast<int64_t>(std::ceil(std::sqrt(8.0 * static_cast<double>(window))));
  const int64_t block = Min64(window, Max64(for_cache, for_long));
  return {block, CeilDiv(window, block) + 1};
}

// Sums (of at most 16 bytes) one CPU thread may hold for a unit's split windows.
constexpr int64_t kSplitScratchSums = int64_t{1} << 17;

// The summed windows whose spans run side by side, where that measured faster than the scans:
// up to kSpanLanesShortMax (blocks of W steps, too short to amortise a scan's set-up), and from
// kSpanLanesLongMin to kSpanLanesWindowMax (a unit stages about W steps of its spans, which must
// stay in cache). Between, blocks of 65-256 steps, the scans measured as fast.
constexpr int64_t kSpanLanesShortMax = 64;
constexpr int64_t kSpanLanesLongMin = 4096;
constexpr int64_t kSpanLanesWindowMax = 8192;

// How many units of kSpanLanes spans side by side a row of a CPU plan holds, for one lane of 16-
// or 32-bit inputs with Wc above what direct sums take (cpu_fast_paths.h) and in the ranges
// above: the spans between the row's first and last, kSpanLanes at a time. Each is
// whole and starts at least 4W steps into the row, so its windows neither reach before the row
// nor grow. A span alone scans its blocks with shuffles inside vectors (PrefixSums); spans side by
// side need none, and each sums in the order of a lane of a wider unit (its bits are that order's).
// Which spans form a unit depends only on the shape and W, so the bits do not depend on threads,
// and a row of a batch has the bits it has alone.
inline int64_t SpanGroupsFor(const Plan& plan) {
  const Call& call = plan.call;
  const int64_t summed = SummedWindow(call);
  const bool faster = (summed > kShortWindowMax && summed <= kSpanLanesShortMax) ||
                      (summed >= kSpanLanesLongMin && summed <= kSpanLanesWindowMax);
  if (call.view.inner != 1 || !SplitSumIsPlain(call.dtype) || !faster ||
      call.ids_kind != Call::Ids::kNone) {
    return 0;
  }
  return Max64(0, plan.spans_per_row - 2) / kSpanLanes;
}

// The CPU's plan: wide lane groups (fewer when a long window's split windows need more scratch
// per lane than kSplitScratchSums allows), spans of about kCpuSpanElements elements.
inline Plan MakeCpuPlan(const Call& call) {
  int64_t max_lanes = kMaxUnitLanes;
  const int64_t lanes = Min64(call.view.inner, kMaxUnitLanes);
  const SplitLayout layout = SplitLayoutFor(SummedWindow(call), lanes);
  if (layout.ScratchSums(lanes) > kSplitScratchSums) {
    const int64_t per_lane = layout.ScratchSums(2) - layout.ScratchSums(1);
    max_lanes = Max64(1, (kSplitScratchSums - layout.ScratchSums(0)) / per_lane);
  }
  const int64_t unit_lanes = Min64(call.view.inner, max_lanes);
  Plan plan = MakePlan(call, max_lanes, Max64(1, kCpuSpanElements / unit_lanes));
  plan.span_groups = SpanGroupsFor(plan);
  plan.num_units = call.view.outer * plan.UnitsPerRow();
  return plan;
}

// Where unit `unit` lives: row, steps [t0, t1), and lanes [lane0, lane0 + lanes).
// spans: 1, or kSpanLanes spans side by side (lane l the span l after the first, l * span_steps
// steps later).
struct UnitRange {
  int64_t row;
  int64_t t0, t1;
  int64_t lane0, lanes;
  int64_t spans;
};

CMA_HOST_DEVICE inline UnitRange UnitAt(const Plan& plan, int64_t unit) {
  const int64_t per_row = plan.UnitsPerRow();
  const int64_t k = unit % per_row;  // (span, lane group), or a row's units of spans side by side
  const int64_t groups = plan.span_groups;
  int64_t group = k % plan.lane_groups_per_row, span = k / plan.lane_groups_per_row;
  UnitRange r;
  r.row = unit / per_row;
  r.spans = 1;
  if (groups > 0) {  // one lane: span 0, then `groups` units of kSpanLanes spans, then the rest
    group = 0;
    if (k == 0) {
      span = 0;
    } else if (k <= groups) {
      span = 1 + kSpanLanes * (k - 1);
      r.spans = kSpanLanes;
    } else {
      span = k + (kSpanLanes - 1) * groups;
    }
  }
  r.t0 = span * plan.span_steps;
  r.t1 = Min64(plan.call.view.steps, r.t0 + plan.span_steps);
  r.lane0 = group * plan.unit_lanes;
  r.lanes = Min64(plan.unit_lanes, plan.call.view.inner - r.lane0);
  return r;
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_PLAN_H_
