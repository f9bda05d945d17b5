// A stream that continues across calls: what the CPU core and the GPU launcher share. A stream's
// state holds the W - 1 inputs before x (zeros before the stream began) and the count of steps
// it has seen. The outputs whose window reaches into that history, steps [0, n) with
// n = min(W - 1, steps), are computed as a short call of their own (the "stage"): per row, the
// history's W - 1 steps then x's first n steps, one sequence whose step 0 lies W - 1 steps before
// x, so every window is its own inputs, summed as in any call, and the divisor of "partial" counts
// *seen - (W - 1) steps before it. (The CPU sums a short head of 16- or 32-bit inputs straight
// from the state instead, newest input first: HeadSummedDirectly, cpu.h.) The rest of x, steps
// [n, steps), is an ordinary call whose windows lie inside x. The next state is the last W - 1
// inputs of history then x.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_STREAM_H_
#define CAUSAL_MOVING_AVG_CC_CORE_STREAM_H_

#include <cstdint>

#include "cc/core/call.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

struct StreamStage {
  int64_t history_steps;  // H = W - 1
  int64_t head_steps;     // n = min(H, steps): x's steps whose window reaches into the history
  Geometry view;          // the stage: [outer, H + n, inner]

  CMA_HOST_DEVICE int64_t Elements() const { return view.outer * view.steps * view.inner; }
};

// Whether a call needs a stage: a stream whose state holds inputs.
CMA_HOST_DEVICE inline bool NeedsStage(const Call& call) {
  return call.IsStream() && call.HistorySteps() > 0;
}

CMA_HOST_DEVICE inline StreamStage StageOf(const Call& call) {
  const int64_t history = call.HistorySteps();
  const int64_t head = Min64(history, call.view.steps);
  return {history, head, {call.view.outer, history + head, call.view.inner}};
}

// The stage as a call of its own, on stage_x (filled by StageInputAt) into stage_y; only its
// outputs at steps >= H are the stream's.
inline Call StageCall(const Call& call, const void* stage_x, void* stage_y) {
  const StreamStage stage = StageOf(call);
  Call staged = call;
  staged.view = stage.view;
  staged.x = stage_x;
  staged.y = stage_y;
  staged.stream = false;
  staged.history = nullptr;
  staged.next_history = nullptr;
  staged.next_seen = nullptr;
  staged.steps_before = -stage.history_steps;  // plus *seen, read where the call computes
  staged.first_output = stage.history_steps;
  return staged;
}

// x's steps after the head: windows inside x, full (divisor W), nothing from the state.
inline Call RestCall(const Call& call) {
  Call rest = call;
  rest.stream = false;
  rest.history = nullptr;
  rest.seen = nullptr;
  rest.next_history = nullptr;
  rest.next_seen = nullptr;
  rest.first_output = StageOf(call).head_steps;
  return rest;
}

// Element i (flat, row-major) of the stage: the history's, then x's.
template <typename T>
CMA_HOST_DEVICE T StageInputAt(const Call& call, const StreamStage& stage, int64_t i) {
  const int64_t row_elements = stage.view.steps * stage.view.inner;
  const int64_t row = i / row_elements, k = i % row_elements;
  const int64_t history_elements = stage.history_steps * stage.view.inner;
  if (k < history_elements) {
    return static_cast<const T*>(call.history)[row * history_elements + k];
  }
  return static_cast<const T*>(
      call.x)[row * call.view.steps * call.view.inner + k - history_elements];
}

// Element i of the next state: the last H inputs of history then x.
template <typename T>
CMA_HOST_DEVICE T NextHistoryAt(const Call& call, int64_t i) {
  const int64_t inner = call.view.inner, history = call.HistorySteps();
  const int64_t row_elements = history * inner;
  const int64_t row = i / row_elements, k = i % row_elements;
  const int64_t from = k + call.view.steps * inner;  // in history then x, row `row`
  if (from < row_elements) return static_cast<const T*>(call.history)[row * row_elements + from];
  return static_cast<const T*>(call.x)[row * call.view.steps * inner + from - row_elements];
}

// The next state's step count: *seen + steps, held at INT64_MAX (a count of W or more divides
// as W does, so nothing depends on where it stops).
CMA_HOST_DEVICE inline int64_t NextSeen(const Call& call) {
  const int64_t seen = *call.seen, steps = call.view.steps;
  return seen > 0 && steps > INT64_MAX - seen ? INT64_MAX : seen + steps;
}

// Where output i of the stream's head (flat over [outer, n, inner]) lies in the stage's output.
CMA_HOST_DEVICE inline int64_t StageOutputOf(const Call& call, const StreamStage& stage,
                                             int64_t i) {
  const int64_t inner = call.view.inner;
  const int64_t head_elements = stage.head_steps * inner;
  const int64_t row = i / head_elements, k = i % head_elements;
  return row * stage.view.steps * inner + stage.history_steps * inner + k;
}
// ... and in y.
CMA_HOST_DEVICE inline int64_t HeadOutputOf(const Call& call, const StreamStage& stage, int64_t i) {
  const int64_t inner = call.view.inner;
  const int64_t head_elements = stage.head_steps * inner;
  return (i / head_elements) * call.view.steps * inner + i % head_elements;
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_STREAM_H_
