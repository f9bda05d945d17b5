// The contract between CausalMovingAvg's XLA kernel, which lowers the op to one typed-FFI custom
// call, and the FFI handlers that run it: the target's name, the attributes, their checks, and
// which XLA platforms have a handler in this library. Free of TensorFlow and of XLA's internal
// headers (the handlers must not see them: XLA's internal ffi.h defines the same names).
#ifndef CAUSAL_MOVING_AVG_CC_XLA_CUSTOM_CALL_H_
#define CAUSAL_MOVING_AVG_CC_XLA_CUSTOM_CALL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cc/core/call.h"
#include "cc/core/types.h"
#include "xla/ffi/api/c_api.h"

namespace causal_moving_avg {

// The custom call's target. Its operands are x, a stream's history and step count (an empty
// array and 0 when x starts its sequence), and sequence ids (an empty array without); its results
// are y, the stream's next history (empty likewise), its next step count and a byte scratch buffer
// (a stream's stage, the GPU's tile sums), all allocated by XLA.
inline constexpr char kXlaTarget[] = "causal_moving_avg";
inline constexpr char kXlaHostPlatform[] = "Host";
inline constexpr char kXlaCudaPlatform[] = "CUDA";

// The custom call's attributes: X(C++ type, name, MLIR type). The one place the contract
// between the XLA kernel (which writes them) and the handlers (which decode them into
// XlaCallAttributes, ffi_handler.h) is written.
#define CMA_FOR_EACH_XLA_ATTRIBUTE(X) \
  X(int64_t, window, "i64")           \
  X(int32_t, edge, "i32")             \
  X(int32_t, stream, "i32")           \
  X(int32_t, ids, "i32")              \
  X(int64_t, outer, "i64")            \
  X(int64_t, steps, "i64")            \
  X(int64_t, inner, "i64")

struct XlaCallAttributes {
#define CMA_XLA_MEMBER(type, name, mlir_type) type name;
  CMA_FOR_EACH_XLA_ATTRIBUTE(CMA_XLA_MEMBER)
#undef CMA_XLA_MEMBER
};

// From a call's description (pointers unused).
inline XlaCallAttributes XlaAttributesOf(const Call& call) {
  XlaCallAttributes attributes;
  const Geometry& view = call.view;
  attributes.window = call.window;
  attributes.edge = static_cast<int32_t>(call.edge);
  attributes.stream = call.IsStream() ? 1 : 0;
  attributes.ids = static_cast<int32_t>(call.ids_kind);
  attributes.outer = view.outer;
  attributes.steps = view.steps;
  attributes.inner = view.inner;
  return attributes;
}

// The attributes as the MLIR dictionary of the custom call's opaque string, e.g. `{window = 3 :
// i64, edge = 0 : i32, stream = 0 : i32, ids = 0 : i32, outer = 2 : i64, steps = 50 : i64, inner =
// 3 : i64}`.
inline std::string XlaAttributesText(const XlaCallAttributes& attributes) {
  std::string text;
#define CMA_XLA_WRITE(type, name, mlir_type)                         \
  text += (text.empty() ? "{" : ", ") + std::string(#name) + " = " + \
          std::to_string(attributes.name) + " : " + mlir_type;
  CMA_FOR_EACH_XLA_ATTRIBUTE(CMA_XLA_WRITE)
#undef CMA_XLA_WRITE
  return text + "}";
}

// Registers `handler` (and an optional `initialize` handler, which XLA runs when it sets up an
// executable, before executing it) for `platform` with XLA's FFI registry and records the
// outcome; called when the library loads. Never throws: a failure is recorded for build_info()
// and for the XLA kernel, which then fails to compile with that message.
void RegisterXlaHandler(const char* platform, XLA_FFI_Handler* handler,
                        XLA_FFI_Handler* initialize = nullptr);

// The platforms whose handler registered, and the failures, as "platform: message" lines.
std::vector<std::string> XlaRegisteredPlatforms();
std::vector<std::string> XlaRegistrationFailures();
bool XlaHandlerRegistered(const std::string& platform);

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_XLA_CUSTOM_CALL_H_
