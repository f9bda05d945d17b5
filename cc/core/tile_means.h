// The tile scan's second pass (see tile_scan.h): the outputs of a tile, in named steps whose
// per-thread state never crosses a barrier.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_TILE_MEANS_H_
#define CAUSAL_MOVING_AVG_CC_CORE_TILE_MEANS_H_

#include <cstdint>
#include <limits>

#include "cc/core/history.h"
#include "cc/core/numerics.h"
#include "cc/core/running_means.h"
#include "cc/core/tile_block.h"
#include "cc/core/tile_scan_plan.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// What every step of TileMeans knows of its tile: where it lies and what precedes it.
template <typename T, typename Sum>
struct TilePosition {
  int64_t tile_in_row;
  int64_t t0, t1;      // its steps
  int64_t first_tile;  // the first of the whole tiles summed into A (may be < 0: none before 0)
  const T* row_x;
  T* row_y;
  const CarefulSum<Sum>* row_sums;  // the row's tile sums (TileSums' results)
};

template <typename T, typename Sum>
CMA_HOST_DEVICE TilePosition<T, Sum> TileAt(const TileScanPlan& plan, const T* x, T* y,
                                            const CarefulSum<Sum>* sums, int64_t tile) {
  const int64_t inner = plan.call.view.inner;
  const int64_t steps = plan.call.view.steps;
  const int64_t row = tile / plan.tiles_per_row;
  TilePosition<T, Sum> view;
  view.tile_in_row = tile % plan.tiles_per_row;
  view.t0 = view.tile_in_row * plan.tile_steps;
  view.t1 = Min64(steps, view.t0 + plan.tile_steps);
  view.first_tile = view.tile_in_row - plan.whole_tiles;
  view.row_x = x + row * steps * inner;
  view.row_y = y + row * steps * inner;
  view.row_sums = sums + row * plan.tiles_per_row * inner;
  return view;
}

// Step 1. Differences entering - leaving into the cells, and each thread's share of A (a tile
// sum that holds a NaN/Inf makes the share NaN, so the lane is redone). All loads come first, so
// none waits for a shared-memory store.
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void LoadDifferences(const Block& block, const TileScanPlan& plan,
                                     const TilePosition<T, Sum>& tile,
                                     const TileScratch<Sum>& scratch) {
  using Acc = typename Sum::Value;
  constexpr int64_t kItems = TileItems<Sum>();
  const int64_t inner = plan.call.view.inner;
  const int64_t per_lane = plan.threads_per_lane;
  // Wc = min(W, steps) in place of W leaves the same inputs at steps < steps.
  const LaneHistory history{plan.summed_window};
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    Sum anchor_share;
    if (th.active) {
      Acc entering[kItems];
      Acc leaving[kItems];
      CMA_UNROLL
      for (int64_t m = 0; m < kItems; ++m) {
        const int64_t k = th.j + m * per_lane;  // coalesced across threads
        const int64_t t = tile.t0 + k;
        const bool in_tile = t < tile.t1;
        leaving[m] = history.Leaves(t) && (in_tile || k < plan.head_steps)
                         ? static_cast<Acc>(tile.row_x[(t - plan.summed_window) * inner + th.lane])
                         : Acc(0);
        entering[m] = in_tile ? static_cast<Acc>(tile.row_x[t * inner + th.lane]) : Acc(0);
      }
      CMA_UNROLL
      for (int64_t m = 0; m < kItems; ++m) {
        const int64_t k = th.j + m * per_lane;
        if (k < plan.head_steps) anchor_share.Add(leaving[m]);
        Sum difference;
        if (tile.t0 + k < tile.t1) difference.Slide(entering[m], leaving[m]);
        scratch.cells[PaddedCell(k * inner + th.lane)] = difference;
      }
    }
    for (int64_t b = Max64(0, tile.first_tile) + th.j; th.active && b < tile.tile_in_row;
         b += per_lane) {
      const CarefulSum<Sum>& tile_sum = tile.row_sums[b * inner + th.lane];
      anchor_share.Merge(tile_sum.finite_sum);
      if (!tile_sum.AllFinite()) anchor_share.Add(std::numeric_limits<Acc>::quiet_NaN());
    }
    scratch.anchor.current[tid] = anchor_share;
    if (tid < kTileMaxInner) scratch.bad_lane[tid] = 0;
  });
}

// Step 2. Each thread's consecutive steps, scanned serially; the thread's total for step 3.
template <typename Sum, typename Block>
CMA_HOST_DEVICE void ScanThreadSteps(const Block& block, const TileScanPlan& plan,
                                     const TileScratch<Sum>& scratch) {
  constexpr int64_t kItems = TileItems<Sum>();
  const int64_t inner = plan.call.view.inner;
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    Sum running;
    for (int64_t m = 0; th.active && m < kItems; ++m) {
      Sum& cell = scratch.cells[PaddedCell((th.j * kItems + m) * inner + th.lane)];
      running.Merge(cell);
      cell = running;
    }
    scratch.thread_sums.current[tid] = running;
  });
}

// Step 4. Window sums = A + the lane's exclusive prefix before this thread + the thread's own
// prefix; the means staged in shared memory, lanes whose sums are not finite flagged.
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void ComputeMeans(const Block& block, const TileScanPlan& plan,
                                  const TilePosition<T, Sum>& tile, const TileScratch<Sum>& scratch,
                                  const DoubleBuffer<Sum>& thread_prefix,
                                  const DoubleBuffer<Sum>& anchor) {
  using Acc = typename Sum::Value;
  constexpr int64_t kItems = TileItems<Sum>();
  const int64_t inner = plan.call.view.inner;
  const auto divisors = DivisorsOf<Acc>(plan.call);
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    if (!th.active) return;
    Sum base = anchor.current[(plan.threads_per_lane - 1) * inner + th.lane];
    if (th.j > 0) base.Merge(thread_prefix.current[(th.j - 1) * inner + th.lane]);
    for (int64_t m = 0; m < kItems; ++m) {
      const int64_t k = th.j * kItems + m;
      const int64_t t = tile.t0 + k;
      if (t >= tile.t1) break;
      Sum window_sum = base;
      window_sum.Merge(scratch.cells[PaddedCell(k * inner + th.lane)]);
      if (!IsFinite(window_sum.Get())) scratch.bad_lane[th.lane] = 1;
      scratch.means[PaddedCell(k * inner + th.lane)] =
          window_sum.Mean(divisors.At(t), divisors.DivisorAt(t));
    }
  });
}

// Step 5. Coalesced store of the lanes whose sums stayed finite.
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void StoreMeans(const Block& block, const TileScanPlan& plan,
                                const TilePosition<T, Sum>& tile, const TileScratch<Sum>& scratch) {
  constexpr int64_t kItems = TileItems<Sum>();
  const int64_t inner = plan.call.view.inner;
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    if (!th.active || scratch.bad_lane[th.lane]) return;
    CMA_UNROLL
    for (int64_t m = 0; m < kItems; ++m) {
      const int64_t k = th.j + m * plan.threads_per_lane;
      if (tile.t0 + k >= tile.t1) break;
      tile.row_y[(tile.t0 + k) * inner + th.lane] =
          RoundTo<T>(scratch.means[PaddedCell(k * inner + th.lane)]);
    }
  });
}

// Step 6 (rare). Lanes that met a NaN/Inf (or overflowed) are redone counting non-finite values,
// from a careful A that the lane's threads build from the tile sums and the head as in step 1;
// then one thread per lane runs the tile serially: O(tile), never the W inputs before it.
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void RedoBadLanes(const Block& block, const TileScanPlan& plan,
                                  const TilePosition<T, Sum>& tile,
                                  const TileScratch<Sum>& scratch) {
  using Acc = typename Sum::Value;
  const int64_t inner = plan.call.view.inner;
  const int64_t per_lane = plan.threads_per_lane;
  DoubleBuffer<CarefulSum<Sum>> careful = scratch.careful;
  const LaneHistory history{plan.summed_window};
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    CarefulSum<Sum> share;
    if (th.active && scratch.bad_lane[th.lane]) {
      for (int64_t k = th.j; k < plan.head_steps; k += per_lane) {
        const int64_t t = tile.t0 + k;
        if (history.Leaves(t)) {
          share.Add(static_cast<Acc>(tile.row_x[(t - plan.summed_window) * inner + th.lane]), 1);
        }
      }
      for (int64_t b = Max64(0, tile.first_tile) + th.j; b < tile.tile_in_row; b += per_lane) {
        share.Merge(tile.row_sums[b * inner + th.lane]);
      }
    }
    careful.current[tid] = share;
  });
  ScanAcrossLaneThreads<CarefulSum<Sum>>(block, plan, &careful, nullptr);
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    if (th.active && th.j == 0 && scratch.bad_lane[th.lane]) {
      CarefulMeans<T, Sum>(careful.current[(per_lane - 1) * inner + th.lane], tile.row_x + th.lane,
                           tile.row_y + th.lane, inner, tile.t0, tile.t1,
                           DivisorsOf<typename Sum::Value>(plan.call));
    }
  });
}

// Second pass: the outputs of tile `tile`. `sums` holds TileSums' results (unused when
// plan.whole_tiles == 0).
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void TileMeans(const Block& block, const TileScanPlan& plan, const T* x, T* y,
                               const CarefulSum<Sum>* sums, int64_t tile_index,
                               const TileScratch<Sum>& scratch) {
  const TilePosition<T, Sum> tile = TileAt(plan, x, y, sums, tile_index);
  LoadDifferences(block, plan, tile, scratch);
  ScanThreadSteps(block, plan, scratch);
  // Step 3: the threads' totals and the shares of A, each scanned across the lane's threads.
  DoubleBuffer<Sum> thread_prefix = scratch.thread_sums;
  DoubleBuffer<Sum> anchor = scratch.anchor;
  ScanAcrossLaneThreads<Sum>(block, plan, &thread_prefix, &anchor);
  ComputeMeans(block, plan, tile, scratch, thread_prefix, anchor);
  StoreMeans(block, plan, tile, scratch);
  // Read after a barrier, the flags are the same for every thread, so all take the same branch.
  bool any_bad = false;
  for (int64_t lane = 0; lane < plan.call.view.inner; ++lane) {
    any_bad = any_bad || scratch.bad_lane[lane] != 0;
  }
  if (any_bad) RedoBadLanes(block, plan, tile, scratch);
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_TILE_MEANS_H_
