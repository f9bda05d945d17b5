// What this binary was built with and what registered when it loaded, readable without
// TensorFlow (Python reads it with ctypes), so build_info() reports the library actually loaded
// rather than what the build was asked for.
#include <string>
#include <vector>

#include "cc/core/cpu.h"
#include "cc/core/gpu_grid.h"
#if CMA_WITH_XLA
#include "cc/xla/custom_call.h"
#endif

#ifndef CMA_TF_VERSION
#error "CMA_TF_VERSION must name the TensorFlow version the library is built against"
#endif
#ifndef CMA_CUDA_VERSION_NUMBER
#define CMA_CUDA_VERSION_NUMBER 0  // no CUDA kernels
#endif
#ifndef CMA_CUDA_COMPILER
#define CMA_CUDA_COMPILER ""
#endif
#ifndef CMA_CUDA_ARCHITECTURES
#define CMA_CUDA_ARCHITECTURES ""
#endif
#ifndef CMA_CUDA_RUNTIME
#define CMA_CUDA_RUNTIME ""
#endif

namespace {

std::string JsonString(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      quoted += ' ';
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

std::string JsonList(const std::vector<std::string>& items) {
  std::string list = "[";
  for (size_t i = 0; i < items.size(); ++i) list += (i ? ", " : "") + JsonString(items[i]);
  return list + "]";
}

// Whether the XLA kernel is built in, the XLA platforms with a handler, and the failures.
#if CMA_WITH_XLA
constexpr bool kXla = true;
std::vector<std::string> XlaPlatforms() { return causal_moving_avg::XlaRegisteredPlatforms(); }
std::vector<std::string> XlaFailures() { return causal_moving_avg::XlaRegistrationFailures(); }
#else
constexpr bool kXla = false;
std::vector<std::string> XlaPlatforms() { return {}; }
std::vector<std::string> XlaFailures() { return {}; }
#endif

}  // namespace

extern "C" __attribute__((visibility("default"))) const char* CausalMovingAvgBuildInfo() {
  // Flat JSON; the Python side parses it and turns the architecture list into a list.
  constexpr int kCuda = CMA_CUDA_VERSION_NUMBER;
  static const std::string info =
      "{\"tensorflow_version\": \"" CMA_TF_VERSION "\", \"cuda_version\": " +
      JsonString(kCuda ? causal_moving_avg::CudaVersionName(kCuda) : "") +
      ", \"cuda_minimum_driver\": " + std::to_string(causal_moving_avg::MinimumDriverFor(kCuda)) +
      ", \"cuda_compiler\": \"" CMA_CUDA_COMPILER
      "\", \"cuda_architectures\": \"" CMA_CUDA_ARCHITECTURES
      "\", \"cuda_runtime\": \"" CMA_CUDA_RUNTIME "\", \"cpu_version\": " +
      JsonString(causal_moving_avg::CpuVersionName(causal_moving_avg::ActiveCpuVersion())) +
      ", \"xla_kernel\": " + (kXla ? "true" : "false") +
      ", \"xla_platforms\": " + JsonList(XlaPlatforms()) +
      ", \"xla_registration_failures\": " + JsonList(XlaFailures()) + "}";
  return info.c_str();
}
