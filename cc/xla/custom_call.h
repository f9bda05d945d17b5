// The contract between CausalMovingAvg's XLA kernel, which lowers the op to one typed-FFI custom
// call, and the FFI handlers that run it: the target's name, the attributes, their checks, and
// which XLA platforms have a handler in this library. Free of TensorFlow and of XLA's internal
// headers (the handlers must not see them: XLA's internal ffi.h defines the same names).
#ifndef CAUSAL_MOVING_AVG_CC_XLA_CUSTOM_CALL_H_
#define CAUSAL_MOVING_AVG_CC_XLA_CUSTOM_CALL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cc/kernels/causal_moving_avg_core.h"
#include "xla/ffi/api/c_api.h"

namespace causal_moving_avg {

// The custom call's target. Its operand is x; its results are y and a byte scratch buffer for
// the GPU's tile sums (empty elsewhere), both allocated by XLA.
inline constexpr char kXlaTarget[] = "causal_moving_avg";
inline constexpr char kXlaHostPlatform[] = "Host";
inline constexpr char kXlaCudaPlatform[] = "CUDA";

// The attributes, an MLIR dictionary in the custom call's opaque string (e.g. `{window = 3 :
// i64, edge = 0 : i32, outer = 2 : i64, steps = 50 : i64, inner = 3 : i64}`).
inline std::string XlaAttributes(Geometry geometry, int64_t window, Edge edge) {
  return "{window = " + std::to_string(window) +
         " : i64, edge = " + std::to_string(static_cast<int32_t>(edge)) +
         " : i32, outer = " + std::to_string(geometry.outer) +
         " : i64, steps = " + std::to_string(geometry.steps) +
         " : i64, inner = " + std::to_string(geometry.inner) + " : i64}";
}

// What a handler checks before computing (the attributes come from our XLA kernel, but an HLO
// module can be written by hand): an empty string when the call is sound, else the problem.
inline std::string CheckXlaCall(Geometry geometry, int64_t x_elements, int64_t y_elements,
                                int64_t window, int32_t edge) {
  if (window < 1) return "window must be >= 1, got " + std::to_string(window);
  if (edge != static_cast<int32_t>(Edge::kZeros) && edge != static_cast<int32_t>(Edge::kPartial)) {
    return "edge must be 0 (zeros) or 1 (partial), got " + std::to_string(edge);
  }
  if (geometry.outer < 0 || geometry.steps < 0 || geometry.inner < 0 ||
      x_elements != geometry.outer * geometry.steps * geometry.inner || y_elements != x_elements) {
    return "the [outer, steps, inner] attributes do not describe the operand and result";
  }
  return "";
}

// Registers `handler` for `platform` with XLA's FFI registry and records the outcome; called
// when the library loads. Never throws: a failure is recorded for build_info() and for the XLA
// kernel, which then fails to compile with that message.
void RegisterXlaHandler(const char* platform, XLA_FFI_Handler* handler);

// The platforms whose handler registered, and the failures, as "platform: message" lines.
std::vector<std::string> XlaRegisteredPlatforms();
std::vector<std::string> XlaRegistrationFailures();
bool XlaHandlerRegistered(const std::string& platform);

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_XLA_CUSTOM_CALL_H_
