// What this binary was built with, readable without TensorFlow (Python reads it with ctypes), so
// build_info() reports the library actually loaded rather than what the build was asked for.
#ifndef CMA_TF_VERSION
#error "CMA_TF_VERSION must name the TensorFlow version the library is built against"
#endif
#ifndef CMA_CUDA_VERSION
#define CMA_CUDA_VERSION ""
#endif
#ifndef CMA_CUDA_ARCHITECTURES
#define CMA_CUDA_ARCHITECTURES ""
#endif
#ifndef CMA_CUDA_RUNTIME
#define CMA_CUDA_RUNTIME ""
#endif

extern "C" __attribute__((visibility("default"))) const char* CausalMovingAvgBuildInfo() {
  // Flat JSON; the Python side parses it and turns the architecture list into a list.
  return "{\"tensorflow_version\": \"" CMA_TF_VERSION "\", \"cuda_version\": \"" CMA_CUDA_VERSION
         "\", \"cuda_architectures\": \"" CMA_CUDA_ARCHITECTURES
         "\", \"cuda_runtime\": \"" CMA_CUDA_RUNTIME "\"}";
}
