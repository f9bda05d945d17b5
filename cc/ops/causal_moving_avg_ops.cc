// Registers the CausalMovingAvg op: its interface, attributes and shape function. The dtypes and
// edge modes come from the core's lists (cc/core/types.h).
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "cc/core/types.h"
#include "cc/kernels/causal_moving_avg_op.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace causal_moving_avg {
namespace {

using ::tensorflow::shape_inference::InferenceContext;

// "T: {half, bfloat16, float, double}"
std::string TypeAttr() {
  std::string attr = "T: {";
  for (const ::tensorflow::DataType type : TfDataTypes()) {
    attr += (attr.back() == '{' ? "" : ", ") + ::tensorflow::DataTypeString(type);
  }
  return attr + "}";
}

// "edge: {'zeros', 'partial'} = 'zeros'": the first mode is the default.
std::string EdgeAttr() {
  std::string modes;
  for (const char* name : kEdgeNames)
    modes += (modes.empty() ? "'" : ", '") + std::string(name) + "'";
  return "edge: {" + modes + "} = '" + NameOf(static_cast<Edge>(0)) + "'";
}

// CausalMovingAvgStream's state shape: x's with the averaged axis window - 1 long, merged with
// the history given, so a state of another batch, channel count or window fails at graph
// construction when both shapes are known.
absl::Status StreamShape(InferenceContext* c) {
  using ::tensorflow::shape_inference::ShapeHandle;
  ShapeHandle seen;
  TF_RETURN_IF_ERROR(c->WithRank(c->input(2), 0, &seen));
  c->set_output(0, c->input(0));
  c->set_output(2, c->Scalar());
  if (!c->RankKnown(c->input(0))) {
    c->set_output(1, c->input(1));
    return absl::OkStatus();
  }
  int64_t axis = 0, window = 1;
  TF_RETURN_IF_ERROR(c->GetAttr("axis", &axis));
  TF_RETURN_IF_ERROR(c->GetAttr("window", &window));
  const int64_t rank = c->Rank(c->input(0));
  TF_RETURN_IF_ERROR(CheckRankAndAxis(rank, axis));
  ShapeHandle expected;
  TF_RETURN_IF_ERROR(
      c->ReplaceDim(c->input(0), axis < 0 ? axis + rank : axis, c->MakeDim(window - 1), &expected));
  ShapeHandle history;
  if (!c->Merge(c->input(1), expected, &history).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CausalMovingAvg: the state's history has shape ", c->DebugString(c->input(1)),
        ", but x of shape ", c->DebugString(c->input(0)), " with window ", window, " needs ",
        c->DebugString(expected),
        " (x's shape with the averaged axis window - 1 long): a state from another window, "
        "batch or channel count?"));
  }
  c->set_output(1, history);
  return absl::OkStatus();
}

// CausalMovingAvgSegments' ids: x's dimensions up to and including the axis.
absl::Status SegmentsShape(InferenceContext* c) {
  using ::tensorflow::shape_inference::ShapeHandle;
  c->set_output(0, c->input(0));
  if (!c->RankKnown(c->input(0))) return absl::OkStatus();
  int64_t axis = 0;
  TF_RETURN_IF_ERROR(c->GetAttr("axis", &axis));
  const int64_t rank = c->Rank(c->input(0));
  TF_RETURN_IF_ERROR(CheckRankAndAxis(rank, axis));
  ShapeHandle expected, merged;
  TF_RETURN_IF_ERROR(c->Subshape(c->input(0), 0, (axis < 0 ? axis + rank : axis) + 1, &expected));
  if (!c->Merge(c->input(1), expected, &merged).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CausalMovingAvg: segment_ids has shape ", c->DebugString(c->input(1)), ", but x of shape ",
        c->DebugString(c->input(0)), " averaged along axis ", axis, " needs ",
        c->DebugString(expected), " (x's dimensions up to and including the axis)"));
  }
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("CausalMovingAvg")
    .Input("x: T")
    .Output("y: T")
    .Attr(TypeAttr())
    .Attr("window: int >= 1")
    .Attr("axis: int")
    .Attr(EdgeAttr())
    .SetShapeFn([](InferenceContext* c) {
      // Rank and axis are checked here when the rank is known, so bad graphs fail when they are
      // built; unknown dims stay unknown.
      if (c->RankKnown(c->input(0))) {
        int64_t axis = 0;
        TF_RETURN_IF_ERROR(c->GetAttr("axis", &axis));
        TF_RETURN_IF_ERROR(CheckRankAndAxis(c->Rank(c->input(0)), axis));
      }
      c->set_output(0, c->input(0));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Causal moving average along one axis: y[t] = (x[t] + ... + x[t-window+1]) / D(t), where inputs
before the start count as zeros and D(t) = window for edge='zeros' (a causal Conv1D with weights
1/window) or min(t + 1, window) for edge='partial' (the mean of the samples seen so far).
A constant to autodiff: its registered gradient is None.

x: the input, at least rank 1.
y: the moving average, same shape and dtype as x.
window: number of samples averaged, >= 1; may exceed the length of the axis.
axis: the axis to average along; negative values count from the end.
edge: 'zeros' or 'partial', see above.
)doc");

}  // namespace causal_moving_avg

namespace causal_moving_avg {

REGISTER_OP("CausalMovingAvgStream")
    .Input("x: T")
    .Input("history: T")
    .Input("seen: int64")
    .Output("y: T")
    .Output("next_history: T")
    .Output("next_seen: int64")
    .Attr(TypeAttr())
    .Attr("window: int >= 1")
    .Attr("axis: int")
    .Attr(EdgeAttr())
    .SetShapeFn(StreamShape)
    .Doc(R"doc(
CausalMovingAvg continuing a stream: the W - 1 inputs before x are `history` (zeros before the
stream began) and `seen` steps came before x (the count edge='partial' divides by). Returns the
averages of x and the next state: the last W - 1 inputs of history then x, and seen plus
x's steps. Its registered
gradients are None (a constant to autodiff).

x: the input, at least rank 1.
history: x's shape with the averaged axis window - 1 long, x's dtype.
seen: int64 scalar >= 0, the steps the stream had before x.
y: the moving average, same shape and dtype as x.
next_history: the state's history for the next call.
next_seen: seen plus x's steps, the state's step count for the next call.
)doc");

}  // namespace causal_moving_avg

namespace causal_moving_avg {

REGISTER_OP("CausalMovingAvgSegments")
    .Input("x: T")
    .Input("segment_ids: Tids")
    .Output("y: T")
    .Attr(TypeAttr())
    .Attr("Tids: {int32, int64}")
    .Attr("window: int >= 1")
    .Attr("axis: int")
    .Attr(EdgeAttr())
    .SetShapeFn(SegmentsShape)
    .Doc(R"doc(
CausalMovingAvg over packed sequences: a sequence begins at step 0 and wherever segment_ids
differs from the previous step's; each window is cut at its sequence's start, and the edge rule
applies there. Its registered gradient is None (a constant to autodiff).

x: the input, at least rank 1.
segment_ids: int32 or int64 ids of shape x.shape[:axis + 1], the same for every channel after it.
y: the moving average, same shape and dtype as x.
)doc");

}  // namespace causal_moving_avg
