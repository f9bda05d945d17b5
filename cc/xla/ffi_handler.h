// What the two FFI handlers (ffi_host.cc, ffi_cuda.cc) share: the custom call's operands,
// results and attributes after each platform's context, and the checks of a call. Includes XLA's
// public FFI header, so only handler files may include it (see custom_call.h).
#ifndef CAUSAL_MOVING_AVG_CC_XLA_FFI_HANDLER_H_
#define CAUSAL_MOVING_AVG_CC_XLA_FFI_HANDLER_H_

#include <cstdint>
#include <string>
#include <utility>

#include "cc/core/types.h"
#include "cc/xla/custom_call.h"
#include "xla/ffi/api/ffi.h"

namespace causal_moving_avg {

// x in; y and the scratch out; the attributes XlaAttributes writes.
template <typename Binding>
auto BindCustomCall(Binding binding) {
  namespace ffi = ::xla::ffi;
  return std::move(binding)
      .template Arg<ffi::AnyBuffer>()
      .template Ret<ffi::AnyBuffer>()
      .template Ret<ffi::AnyBuffer>()
      .template Attr<int64_t>("window")
      .template Attr<int32_t>("edge")
      .template Attr<int64_t>("outer")
      .template Attr<int64_t>("steps")
      .template Attr<int64_t>("inner");
}

// The dtype of an XLA buffer element type; false for types the op does not take.
inline bool DTypeOfXla(XLA_FFI_DataType type, DType* dtype) {
  switch (type) {
    case XLA_FFI_DataType_F16:
      *dtype = DType::kFloat16;
      return true;
    case XLA_FFI_DataType_BF16:
      *dtype = DType::kBfloat16;
      return true;
    case XLA_FFI_DataType_F32:
      *dtype = DType::kFloat32;
      return true;
    case XLA_FFI_DataType_F64:
      *dtype = DType::kFloat64;
      return true;
    default:
      return false;
  }
}

// What a handler checks before computing (the attributes come from our XLA kernel, but an HLO
// module can be written by hand): an empty string when the call is sound, else the problem.
inline std::string CheckXlaCall(Geometry geometry, XLA_FFI_DataType type, int64_t x_elements,
                                int64_t y_elements, int64_t window, int32_t edge, DType* dtype) {
  if (!DTypeOfXla(type, dtype)) return "x must be float16, bfloat16, float32 or float64";
  if (window < 1) return "window must be >= 1, got " + std::to_string(window);
  if (EdgeName(static_cast<Edge>(edge))[0] == '\0') {
    return "unknown edge mode " + std::to_string(edge);
  }
  if (geometry.outer < 0 || geometry.steps < 0 || geometry.inner < 0 ||
      x_elements != geometry.outer * geometry.steps * geometry.inner || y_elements != x_elements) {
    return "the [outer, steps, inner] attributes do not describe the operand and result";
  }
  return "";
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_XLA_FFI_HANDLER_H_
