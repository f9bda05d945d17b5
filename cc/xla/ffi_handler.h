// What the two FFI handlers (ffi_host.cc, ffi_cuda.cc) share: the custom call's operands,
// results and attributes after each platform's context, and reading them. Includes XLA's
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

// A custom call's arguments, checked (the attributes come from our XLA kernel, but an HLO module
// can be written by hand).
struct XlaCall {
  Geometry geometry;
  DType dtype;
  int64_t window;
  Edge edge;
};

// Reads and checks a call; an error names the problem.
inline ::xla::ffi::Error ReadXlaCall(const ::xla::ffi::AnyBuffer& x, const ::xla::ffi::AnyBuffer& y,
                                     int64_t window, int32_t edge, int64_t outer, int64_t steps,
                                     int64_t inner, XlaCall* call) {
  namespace ffi = ::xla::ffi;
  const auto invalid = [](const std::string& problem) {
    return ffi::Error::InvalidArgument("CausalMovingAvg: " + problem);
  };
  switch (x.element_type()) {
    case ffi::DataType::F16:
      call->dtype = DType::kFloat16;
      break;
    case ffi::DataType::BF16:
      call->dtype = DType::kBfloat16;
      break;
    case ffi::DataType::F32:
      call->dtype = DType::kFloat32;
      break;
    case ffi::DataType::F64:
      call->dtype = DType::kFloat64;
      break;
    default:
      return invalid("x must be float16, bfloat16, float32 or float64");
  }
  if (window < 1) return invalid("window must be >= 1, got " + std::to_string(window));
  if (EdgeName(static_cast<Edge>(edge))[0] == '\0') {
    return invalid("unknown edge mode " + std::to_string(edge));
  }
  const int64_t elements = static_cast<int64_t>(x.element_count());
  if (outer < 0 || steps < 0 || inner < 0 || elements != outer * steps * inner ||
      static_cast<int64_t>(y.element_count()) != elements || y.element_type() != x.element_type()) {
    return invalid("the [outer, steps, inner] attributes do not describe the operand and result");
  }
  *call = {{outer, steps, inner}, call->dtype, window, static_cast<Edge>(edge)};
  return ffi::Error::Success();
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_XLA_FFI_HANDLER_H_
