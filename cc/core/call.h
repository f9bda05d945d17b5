// One call of the op as every binding describes it: the TF kernels, the XLA handlers, the NumPy
// binding and the GPU harness each fill a Call once, check it here, and pass it by value to the
// CPU core or the GPU launcher. An optional input (a stream's state, sequence ids) joins as a
// field here, a check in CheckCall and a branch where the kernels read it.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_CALL_H_
#define CAUSAL_MOVING_AVG_CC_CORE_CALL_H_

#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cc/core/history.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

struct Call {
  Geometry view;  // x and y seen as [outer, steps, inner]
  DType dtype;
  int64_t window;
  Edge edge;
  const void* x;  // view.outer * view.steps * view.inner elements of dtype
  void* y;        // as many, written by the call

  // A stream that continues (stream.h); otherwise x starts its sequence. The pointers are in the
  // memory of the device that computes the call.
  bool stream = false;
  const void* history = nullptr;  // [outer, W - 1, inner]: the W - 1 inputs before x, oldest first
  const int64_t* seen = nullptr;  // how many steps the stream had before x (the divisor's count)
  void* next_history = nullptr;   // [outer, W - 1, inner]: the last W - 1 inputs of history then x
  int64_t* next_seen = nullptr;   // *seen + steps (NextSeen)

  // Packed sequences (optional): one id per row and step, [outer, steps]; a sequence begins at
  // step 0 and wherever the id differs from the previous step's. `ids_kind` describes them also
  // where only the call's description is known (the pointer null).
  enum class Ids { kNone, kInt32, kInt64 } ids_kind = Ids::kNone;
  const void* segment_ids = nullptr;

  // Set only by the stream's staging: steps the divisor counts before step 0 besides *seen, and
  // the first step whose output the CPU writes.
  int64_t steps_before = 0;
  int64_t first_output = 0;

  CMA_HOST_DEVICE int64_t Elements() const { return view.outer * view.steps * view.inner; }
  CMA_HOST_DEVICE bool IsStream() const { return stream; }
  CMA_HOST_DEVICE bool HasSegments() const { return ids_kind != Ids::kNone; }
  // Row `row`'s sequence ids (none without segments).
  CMA_HOST_DEVICE SequenceIds IdsOfRow(int64_t row) const {
    if (segment_ids == nullptr) return {};
    const bool wide = ids_kind == Ids::kInt64;
    const char* base = static_cast<const char*>(segment_ids);
    return {base + row * view.steps * (wide ? 8 : 4), wide};
  }
  // The steps of a stream's state per lane: W - 1.
  CMA_HOST_DEVICE int64_t HistorySteps() const { return window - 1; }
};

// Wc = min(W, steps): a longer window holds no more inputs (those before step 0 are zeros), so
// this is what the kernels sum; W itself stays the divisor.
CMA_HOST_DEVICE inline int64_t SummedWindow(const Call& call) {
  return call.window < call.view.steps ? call.window : call.view.steps;
}

// The part of CheckCall that needs no input: what a kernel can check when it is built.
inline std::string CheckWindowAndEdge(int64_t window, Edge edge) {
  if (window < 1) return "window must be >= 1, got " + std::to_string(window);
  if (NameOf(edge)[0] == '\0') return "unknown edge mode " + std::to_string(static_cast<int>(edge));
  return "";
}

// Empty when `call` is one the kernels compute; otherwise the problem, in words a user can act
// on (the bindings prefix their own context). The only place these rules are written.
inline std::string CheckCall(const Call& call) {
  if (std::string problem = CheckWindowAndEdge(call.window, call.edge); !problem.empty()) {
    return problem;
  }
  if (NameOf(call.dtype)[0] == '\0') {
    return "unsupported dtype " + std::to_string(static_cast<int>(call.dtype));
  }
  if (call.view.outer < 0 || call.view.steps < 0 || call.view.inner < 0) {
    return "the [outer, steps, inner] view has a negative size";
  }
  if (call.Elements() > 0 && (call.x == nullptr || call.y == nullptr)) {
    return "x and y must point to data";
  }
  if (call.HasSegments()) {
    if (call.IsStream()) return "a stream cannot take sequence ids";
    if (call.view.outer * call.view.steps > 0 && call.segment_ids == nullptr) {
      return "sequence ids must point to data";
    }
  }
  if (call.IsStream()) {
    const int64_t lanes = call.view.outer * call.view.inner;
    if (call.HistorySteps() > INT64_MAX / Max64(1, lanes)) {
      return "window " + std::to_string(call.window) + " is too long for a stream's state";
    }
    if (call.seen == nullptr || call.next_seen == nullptr ||
        (call.HistorySteps() * lanes > 0 &&
         (call.history == nullptr || call.next_history == nullptr))) {
      return "a stream needs its state, its step count and a place for its next state";
    }
  }
  return "";
}

// Calls fn(T{}) with the C++ type of `dtype` in a binding whose 16-bit types are Float16 and
// Bfloat16: the one dtype dispatch every binding uses.
template <typename Float16, typename Bfloat16, typename Fn>
void VisitDType(DType dtype, Fn&& fn) {
  switch (dtype) {
#define CMA_VISIT(enumerator, name)                        \
  case DType::enumerator:                                  \
    fn(CppTypeOf<Float16, Bfloat16, DType::enumerator>{}); \
    break;
    CMA_FOR_EACH_DTYPE(CMA_VISIT)
#undef CMA_VISIT
  }
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_CALL_H_
