// Registers the XLA FFI handlers with the registry TensorFlow's XLA uses (one per process, in
// libtensorflow_framework) and remembers which platforms succeeded.
#include <mutex>
#include <string>
#include <vector>

#include "cc/xla/custom_call.h"
#include "xla/ffi/api/ffi.h"

namespace causal_moving_avg {
namespace {

struct Registrations {
  std::mutex mutex;
  std::vector<std::string> platforms;
  std::vector<std::string> failures;
};

Registrations& Get() {
  static Registrations* registrations = new Registrations;  // never destroyed: used at exit
  return *registrations;
}

}  // namespace

void RegisterXlaHandler(const char* platform, XLA_FFI_Handler* handler,
                        XLA_FFI_Handler* initialize) {
  const XLA_FFI_Api* api = XLA_FFI_GetApi();
  std::string failure;
  if (api == nullptr) {
    failure = "TensorFlow's XLA FFI API is not available";
  } else if (XLA_FFI_Error* error = xla::ffi::Ffi::RegisterStaticHandler(
                 api, kXlaTarget, platform,
                 XLA_FFI_Handler_Bundle{nullptr, nullptr, initialize, handler})) {
    failure = xla::ffi::internal::GetErrorMessage(api, error);
    xla::ffi::internal::DestroyError(api, error);
  }
  Registrations& registrations = Get();
  std::lock_guard<std::mutex> lock(registrations.mutex);
  if (failure.empty()) {
    registrations.platforms.push_back(platform);
  } else {
    registrations.failures.push_back(std::string(platform) + ": " + failure);
  }
}

std::vector<std::string> XlaRegisteredPlatforms() {
  std::lock_guard<std::mutex> lock(Get().mutex);
  return Get().platforms;
}

std::vector<std::string> XlaRegistrationFailures() {
  std::lock_guard<std::mutex> lock(Get().mutex);
  return Get().failures;
}

bool XlaHandlerRegistered(const std::string& platform) {
  for (const std::string& registered : XlaRegisteredPlatforms()) {
    if (registered == platform) return true;
  }
  return false;
}

}  // namespace causal_moving_avg
