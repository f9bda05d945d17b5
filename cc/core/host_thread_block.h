// The host emulation of a CUDA thread block, for the tile scan's steps (tile_scan.h): core_test
// runs the GPU's algorithm with it on machines without a GPU. Host only.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_HOST_THREAD_BLOCK_H_
#define CAUSAL_MOVING_AVG_CC_CORE_HOST_THREAD_BLOCK_H_

#include "cc/core/tile_scan_plan.h"

namespace causal_moving_avg {

// The host executor: runs a phase for every thread of the thread block in turn (the barrier is
// implicit).
struct HostThreadBlock {
  template <typename Body>
  void Phase(Body&& body) const {
    for (int tid = 0; tid < kTileThreads; ++tid) body(tid);
  }
};

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_HOST_THREAD_BLOCK_H_
