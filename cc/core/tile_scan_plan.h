// The tile scan's plan (see tile_scan.h): how a narrow layout is cut into tiles, and the global
// scratch of the tile sums. Host and device.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_TILE_SCAN_PLAN_H_
#define CAUSAL_MOVING_AVG_CC_CORE_TILE_SCAN_PLAN_H_

#include <cstdint>

#include "cc/core/call.h"
#include "cc/core/numerics.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

constexpr int kTileThreads = 256;
// Narrower than a warp: the layouts the tile scan serves (wider ones are coalesced per lane).
constexpr int64_t kTileMaxInner = 32;

// Consecutive steps one thread scans serially: fills the scratch to about 16 KB per Sum array.
// A compile-time count, so the loops over a thread's steps unroll on the GPU and all of its loads
// are in flight together.
template <typename Sum>
constexpr int64_t TileItems() {
  return sizeof(Sum) > 16 ? 2 : sizeof(Sum) > 8 ? 4 : 8;
}

struct TileScanPlan {
  Call call;                 // what is computed; its window sets the divisor
  int64_t summed_window;     // Wc = min(window, steps): sets which inputs are summed
  int64_t threads_per_lane;  // P = kTileThreads / inner; thread tid serves lane tid % inner
  int64_t tile_steps;        // P * TileItems<Sum>()
  int64_t tiles_per_row;
  int64_t num_tiles;    // outer * tiles_per_row
  int64_t whole_tiles;  // Wc / tile_steps: tile sums in A
  int64_t head_steps;   // Wc % tile_steps: leaving values in A
};

// Requires steps >= 1 and 1 <= inner < kTileMaxInner.
template <typename Sum>
CMA_HOST_DEVICE inline TileScanPlan MakeTileScanPlan(const Call& call) {
  const Geometry& geometry = call.view;
  TileScanPlan plan;
  plan.call = call;
  plan.summed_window = SummedWindow(call);
  plan.threads_per_lane = kTileThreads / geometry.inner;
  plan.tile_steps = plan.threads_per_lane * TileItems<Sum>();
  plan.tiles_per_row = CeilDiv(geometry.steps, plan.tile_steps);
  plan.num_tiles = geometry.outer * plan.tiles_per_row;
  plan.whole_tiles = plan.summed_window / plan.tile_steps;
  plan.head_steps = plan.summed_window % plan.tile_steps;
  return plan;
}

// Global scratch for the tile sums, one CarefulSum per (tile, lane); none when no window
// spans a whole tile.
template <typename Sum>
inline int64_t TileSumsBytes(const TileScanPlan& plan) {
  return plan.whole_tiles == 0 ? 0
                               : plan.num_tiles * plan.call.view.inner *
                                     static_cast<int64_t>(sizeof(CarefulSum<Sum>));
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_TILE_SCAN_PLAN_H_
