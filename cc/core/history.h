// What precedes step t of a lane: the one owner of where a window's history begins and what it
// holds, used by every CPU path and GPU kernel. Today a lane's sequence begins at step 0 and
// nothing comes before it (inputs before step 0 count as zeros: a fresh start). The inputs a
// stream carries over from an earlier call, and a packed sequence that begins at a later step,
// are what this grows: a field here and its use in these functions, not a change at every site.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_HISTORY_H_
#define CAUSAL_MOVING_AVG_CC_CORE_HISTORY_H_

#include <cstdint>

#include "cc/core/types.h"

namespace causal_moving_avg {

struct LaneHistory {
  int64_t window;  // W

  // The step where the sequence holding step t begins: inputs before it are not in its windows.
  CMA_HOST_DEVICE int64_t SequenceStart(int64_t /*t*/) const { return 0; }
  // The first step of step t's window that holds an input.
  CMA_HOST_DEVICE int64_t WindowBegin(int64_t t) const {
    return Max64(SequenceStart(t), t - window + 1);
  }
  // How many inputs step t's window holds (what the edge "partial" divides by).
  CMA_HOST_DEVICE int64_t Terms(int64_t t) const { return t + 1 - WindowBegin(t); }
  // Whether an input leaves the window at step t (the one at step t - W).
  CMA_HOST_DEVICE bool Leaves(int64_t t) const { return t - window >= SequenceStart(t); }
  // The first step at which inputs leave the window: before it the window only grows.
  CMA_HOST_DEVICE int64_t FirstLeaving() const { return SequenceStart(0) + window; }
};

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_HISTORY_H_
