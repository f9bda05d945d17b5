// How the work is cut into independent units: (row, segment of steps, group of lanes). Segment
// boundaries depend only on the shape and the window, never on the number of threads, and every
// unit restarts its sums from the input ("re-anchors"), so results are bitwise identical however
// units are spread over threads, and rounding cannot drift past one segment.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_PLAN_H_
#define CAUSAL_MOVING_AVG_CC_CORE_PLAN_H_

#include <cstdint>

#include "cc/core/types.h"

namespace causal_moving_avg {

struct Plan {
  Geometry geometry;
  int64_t window;
  Edge edge;
  int64_t segment_steps;        // steps per segment (the last of a row may be shorter)
  int64_t unit_lanes;           // lanes per unit (the last group of a row may be narrower)
  int64_t segments_per_row;     // ceil(steps / segment_steps)
  int64_t lane_groups_per_row;  // ceil(inner / unit_lanes)
  int64_t num_units;            // outer * segments_per_row * lane_groups_per_row
};

// Most lanes one CPU unit carries; bounds the accumulator array a unit keeps on its stack.
constexpr int64_t kMaxUnitLanes = 256;
// Elements per CPU segment: enough to amortise the re-anchoring and the per-unit set-up.
constexpr int64_t kCpuSegmentElements = 1 << 15;
// Steps per GPU segment at least (one thread runs one unit: short segments, many threads).
constexpr int64_t kGpuMinSegmentSteps = 64;

// `max_unit_lanes` is how many lanes one unit advances together: up to kMaxUnitLanes on the CPU
// (SIMD over contiguous channels), 1 on the GPU (one thread per lane). A segment spans at least
// `min_segment_steps` steps. Requires steps, inner >= 1.
inline Plan MakePlan(Geometry geometry, int64_t window, Edge edge, int64_t max_unit_lanes,
                     int64_t min_segment_steps) {
  Plan plan;
  plan.geometry = geometry;
  plan.window = window;
  plan.edge = edge;
  plan.unit_lanes = Min64(geometry.inner, max_unit_lanes);
  // Re-anchoring a segment reads up to W earlier inputs; segments of at least 4W keep that below
  // a quarter of the segment's own reads, so the cost per output does not grow with W.
  const int64_t effective_window = Min64(window, geometry.steps);
  plan.segment_steps = Min64(geometry.steps, Max64(min_segment_steps, 4 * effective_window));
  plan.segments_per_row = CeilDiv(geometry.steps, plan.segment_steps);
  plan.lane_groups_per_row = CeilDiv(geometry.inner, plan.unit_lanes);
  plan.num_units = geometry.outer * plan.segments_per_row * plan.lane_groups_per_row;
  return plan;
}

// The GPU's plan for its running-sum kernel.
inline Plan MakeGpuPlan(Geometry geometry, int64_t window, Edge edge) {
  return MakePlan(geometry, window, edge, /*max_unit_lanes=*/1, kGpuMinSegmentSteps);
}

// The CPU's plan: wide lane groups, segments of about kCpuSegmentElements elements.
inline Plan MakeCpuPlan(Geometry geometry, int64_t window, Edge edge) {
  const int64_t unit_lanes = Min64(geometry.inner, kMaxUnitLanes);
  return MakePlan(geometry, window, edge, kMaxUnitLanes,
                  Max64(1, kCpuSegmentElements / unit_lanes));
}

// Where unit `unit` lives: row, steps [t0, t1), and lanes [lane0, lane0 + lanes).
struct UnitRange {
  int64_t row;
  int64_t t0, t1;
  int64_t lane0, lanes;
};

CMA_HOST_DEVICE inline UnitRange UnitAt(const Plan& plan, int64_t unit) {
  const int64_t group = unit % plan.lane_groups_per_row;
  const int64_t rest = unit / plan.lane_groups_per_row;
  const int64_t segment = rest % plan.segments_per_row;
  UnitRange r;
  r.row = rest / plan.segments_per_row;
  r.t0 = segment * plan.segment_steps;
  r.t1 = Min64(plan.geometry.steps, r.t0 + plan.segment_steps);
  r.lane0 = group * plan.unit_lanes;
  r.lanes = Min64(plan.unit_lanes, plan.geometry.inner - r.lane0);
  return r;
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_PLAN_H_
