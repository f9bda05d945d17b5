// Registers the CausalMovingAvg op: its interface, attributes and shape function. The dtypes and
// edge modes come from the core's lists (cc/core/types.h).
#include <cstdint>
#include <string>

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
