// One call of the op as every binding describes it: the TF kernels, the XLA handlers, the NumPy
// binding and the GPU harness each fill a Call once, check it here, and pass it by value to the
// CPU core or the GPU launcher. An optional input (a stream's state, sequence ids) joins as a
// field here, a check in CheckCall and a branch where the kernels read it.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_CALL_H_
#define CAUSAL_MOVING_AVG_CC_CORE_CALL_H_

#include <cstdint>
#include <string>
#include <type_traits>

#include "cc/core/types.h"

namespace causal_moving_avg {

struct Call {
  Geometry view;  // x and y seen as [outer, steps, inner]
  DType dtype;
  int64_t window;
  Edge edge;
  const void* x;  // view.outer * view.steps * view.inner elements of dtype
  void* y;        // as many, written by the call

  CMA_HOST_DEVICE int64_t Elements() const { return view.outer * view.steps * view.inner; }
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
