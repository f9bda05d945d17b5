// The tile scan's first pass (see tile_scan.h): each lane's careful sum over each tile, which the
// second pass adds up for windows of a tile or more.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_TILE_SUMS_H_
#define CAUSAL_MOVING_AVG_CC_CORE_TILE_SUMS_H_

#include <cstdint>

#include "cc/core/numerics.h"
#include "cc/core/tile_block.h"
#include "cc/core/tile_scan_plan.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// First pass: every lane's careful sum over tile `tile`, into sums[tile * inner + lane].
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void TileSums(const Block& block, const TileScanPlan& plan, const T* x,
                              CarefulSum<Sum>* sums, int64_t tile,
                              const TileScratch<Sum>& scratch) {
  using Acc = typename Sum::Value;
  const int64_t inner = plan.call.view.inner;
  const int64_t row = tile / plan.tiles_per_row;
  const int64_t t0 = (tile % plan.tiles_per_row) * plan.tile_steps;
  const T* row_x = x + row * plan.call.view.steps * inner;
  constexpr int64_t kItems = TileItems<Sum>();
  DoubleBuffer<CarefulSum<Sum>> careful = scratch.careful;
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    CarefulSum<Sum> sum;
    if (th.active) {
      Acc values[kItems];
      CMA_UNROLL
      for (int64_t m = 0; m < kItems; ++m) {
        const int64_t t = t0 + th.j + m * plan.threads_per_lane;  // coalesced across threads
        values[m] =
            t < plan.call.view.steps ? static_cast<Acc>(row_x[t * inner + th.lane]) : Acc(0);
      }
      CMA_UNROLL
      for (int64_t m = 0; m < kItems; ++m) sum.Add(values[m], 1);
    }
    careful.current[tid] = sum;
  });
  ScanAcrossLaneThreads<CarefulSum<Sum>>(block, plan, &careful, nullptr);
  block.Phase([&](int tid) {
    if (tid < inner) {
      sums[tile * inner + tid] = careful.current[(plan.threads_per_lane - 1) * inner + tid];
    }
  });
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_TILE_SUMS_H_
