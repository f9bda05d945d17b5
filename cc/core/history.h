// What precedes step t of a lane: the one owner of where a window's history begins and what it
// holds, used by every CPU path and GPU kernel. A lane's sequence begins at step 0 (inputs before
// it count as zeros: a fresh start), and, with sequence ids (packed sequences, `segment_ids`),
// again wherever a step's id differs from the previous step's: a window never reaches across.
// A stream's earlier inputs are staged before step 0 (stream.h), so they precede it as inputs.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_HISTORY_H_
#define CAUSAL_MOVING_AVG_CC_CORE_HISTORY_H_

#include <cstdint>

#include "cc/core/types.h"

namespace causal_moving_avg {

// A row's sequence ids, one per step, int32 or int64 (null: the row is one sequence).
struct SequenceIds {
  const void* data = nullptr;
  bool wide = false;  // int64

  CMA_HOST_DEVICE int64_t At(int64_t t) const {
    return wide ? static_cast<const int64_t*>(data)[t] : static_cast<const int32_t*>(data)[t];
  }
  // Whether a sequence begins at step t (> 0): its id differs from the previous step's.
  CMA_HOST_DEVICE bool StartsAt(int64_t t) const { return At(t) != At(t - 1); }
};

struct LaneHistory {
  int64_t window;        // W
  SequenceIds ids = {};  // the lane's row's ids

  // The step where the lane's sequence begins, for paths that take a row as one sequence (the
  // CPU cuts a row with ids into its sequences first).
  CMA_HOST_DEVICE int64_t SequenceStart(int64_t /*t*/) const { return 0; }
  // The first step of step t's window that holds an input of t's sequence: with ids, the window
  // is cut where an id changes (found by walking back at most W - 1 steps).
  CMA_HOST_DEVICE int64_t WindowBegin(int64_t t) const {
    const int64_t begin = Max64(SequenceStart(t), t - window + 1);
    if (ids.data == nullptr) return begin;
    int64_t j = t;
    while (j > begin && !ids.StartsAt(j)) --j;
    return j;
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
