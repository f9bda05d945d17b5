// Runs the CUDA kernels without TensorFlow (the GPU machine this project borrows has none), in
// one command:
//   1. correctness: the GPU result against the CPU core over a matrix of shapes, windows, edges
//      and dtypes, with NaN/Inf inputs, and outputs poisoned twice (a NaN pattern and a finite
//      one) so an element the kernel never wrote cannot pass;
//   2. speed: CUDA-event medians on large tensors, as GB/s of read + write traffic and as a
//      ratio to a device-to-device copy of the same bytes timed in the same run.
// Usage: cma_gpu_harness [--quick]. Exit 0: all passed; 1: a failure; 77: no GPU (skipped).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "cc/core/call.h"
#include "cc/core/cpu.h"
#include "cc/core/gpu_direct.h"
#include "cc/core/gpu_grid.h"
#include "cc/core/gpu_launch.h"
#include "cc/core/plan.h"
#include "cc/core/running_means.h"
#include "cc/core/types.h"

namespace cma = causal_moving_avg;

namespace {

#define CHECK_CUDA(call)                                                 \
  do {                                                                   \
    const cudaError_t status_ = (call);                                  \
    if (status_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(status_));                         \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

#define CHECK_LAUNCH(call)                                                                \
  do {                                                                                    \
    const cma::GpuStatus status_ = (call);                                                \
    if (!status_.ok()) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, status_.Message().c_str()); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

// Each dtype's name and allowed error relative to the window's magnitude: one rounding of the
// output type plus the accumulator's (the GPU may sum in another order than the CPU).
struct DtypeInfo {
  const char* name;
  double tolerance;
  cma::DType dtype;
};
template <typename T>
constexpr DtypeInfo InfoOf() {
  if constexpr (std::is_same_v<T, __half>) {
    return {"half", 2e-3, cma::DType::kFloat16};
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return {"bfloat16", 1.6e-2, cma::DType::kBfloat16};
  } else if constexpr (std::is_same_v<T, float>) {
    return {"float", 4e-7, cma::DType::kFloat32};
  } else {
    static_assert(std::is_same_v<T, double>, "the harness covers the op's four dtypes");
    return {"double", 1e-13, cma::DType::kFloat64};
  }
}

// The harness's description of a call on device buffers.
template <typename T>
cma::Call CallOf(cma::Geometry view, int64_t window, cma::Edge edge, const T* x, T* y) {
  return {view, InfoOf<T>().dtype, window, edge, x, y};
}

template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}

struct Case {
  cma::Geometry geometry;
  int64_t window;
  cma::Edge edge;
  bool specials;  // sprinkle NaN / +Inf / -Inf
  cma::GpuKernel kernel;
};

template <typename T>
std::vector<T> MakeInput(const Case& c, std::mt19937_64& rng) {
  const int64_t n = c.geometry.outer * c.geometry.steps * c.geometry.inner;
  std::normal_distribution<double> normal(0.0, 10.0);
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(normal(rng));
  if (c.specials && n > 0) {
    const double specials[] = {NAN, INFINITY, -INFINITY, INFINITY};
    for (int k = 0; k < 12; ++k) x[rng() % n] = static_cast<T>(specials[k % 4]);
  }
  return x;
}

template <typename T>
std::vector<T> RunGpu(const Case& c, const std::vector<T>& x, unsigned char poison) {
  const size_t bytes = x.size() * sizeof(T);
  T *dx = nullptr, *dy = nullptr;
  void* scratch = nullptr;
  CHECK_CUDA(cudaMalloc(&dx, bytes + 1));
  CHECK_CUDA(cudaMalloc(&dy, bytes + 1));
  CHECK_CUDA(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dy, poison, bytes));
  if (!x.empty()) {
    // The scratch is poisoned too: the kernels must write what they read there.
    const int64_t scratch_bytes =
        cma::GpuScratchBytes(CallOf<T>(c.geometry, c.window, c.edge, dx, dy), c.kernel);
    CHECK_CUDA(cudaMalloc(&scratch, scratch_bytes + 1));
    CHECK_CUDA(cudaMemset(scratch, poison, scratch_bytes + 1));
    CHECK_LAUNCH(cma::LaunchOnGpu(CallOf<T>(c.geometry, c.window, c.edge, dx, dy), nullptr, scratch,
                                  c.kernel));
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<T> y(x.size());
  CHECK_CUDA(cudaMemcpy(y.data(), dy, bytes, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(dx));
  CHECK_CUDA(cudaFree(dy));
  CHECK_CUDA(cudaFree(scratch));
  return y;
}

// Returns an empty string when the GPU output matches the CPU core, else what went wrong.
template <typename T>
std::string Check(const Case& c, std::mt19937_64& rng) {
  const std::vector<T> x = MakeInput<T>(c, rng);
  std::vector<T> expected(x.size());
  std::vector<double> magnitude(x.size()), abs_x(x.size());
  for (size_t i = 0; i < x.size(); ++i) abs_x[i] = std::fabs(ToDouble(x[i]));
  if (!x.empty()) {
    const cma::Plan plan =
        cma::MakeCpuPlan(CallOf<T>(c.geometry, c.window, c.edge, x.data(), expected.data()));
    cma::ComputeUnits<T>(plan, x.data(), expected.data(), 0, plan.num_units);
    cma::ComputeUnits<double>(plan, abs_x.data(), magnitude.data(), 0, plan.num_units);
  }
  for (unsigned char poison : {0xFF, 0x7B}) {  // a NaN pattern, then a finite one
    const std::vector<T> got = RunGpu<T>(c, x, poison);
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = ToDouble(expected[i]);
      const double g = ToDouble(got[i]);
      const bool same_special = (std::isnan(e) && std::isnan(g)) || (std::isinf(e) && e == g);
      const bool close = std::isfinite(e) && std::isfinite(g) &&
                         std::fabs(g - e) <= InfoOf<T>().tolerance * magnitude[i] + 1e-30;
      if (!same_special && !close) {
        char message[200];
        std::snprintf(message, sizeof(message), "element %zu: gpu %.17g, cpu %.17g (poison 0x%02X)",
                      i, g, e, poison);
        return message;
      }
    }
  }
  return "";
}

// Each GPU output within the dtype's tolerance of the CPU's (relative to its window's magnitude),
// non-finite ones equal. Empty: all are.
template <typename T>
std::string CompareToCpu(const std::vector<T>& expected, const std::vector<T>& got,
                         const std::vector<double>& magnitude) {
  for (size_t i = 0; i < expected.size(); ++i) {
    const double e = ToDouble(expected[i]), v = ToDouble(got[i]);
    const bool same_special = (std::isnan(e) && std::isnan(v)) || (std::isinf(e) && e == v);
    const bool close = std::isfinite(e) && std::isfinite(v) &&
                       std::fabs(v - e) <= InfoOf<T>().tolerance * magnitude[i] + 1e-30;
    if (!same_special && !close) {
      char message[200];
      std::snprintf(message, sizeof(message), "element %zu: gpu %.17g, cpu %.17g", i, v, e);
      return message;
    }
  }
  return "";
}

// A stream on the GPU (its state in device memory, `seen` included) against the CPU core's stream:
// outputs within the tolerance, the next state exactly the last W - 1 inputs. Empty: passed.
template <typename T>
std::string CheckStream(cma::Geometry g, int64_t window, cma::Edge edge, int64_t seen,
                        std::mt19937_64& rng) {
  const std::vector<T> x = MakeInput<T>(Case{g, window, edge, true, cma::GpuKernel::kAuto}, rng);
  const cma::Geometry state_view{g.outer, window - 1, g.inner};
  std::vector<T> history =
      MakeInput<T>(Case{state_view, window, edge, false, cma::GpuKernel::kAuto}, rng);
  const int64_t n = x.size(), h = history.size();
  std::vector<T> expected(n), expected_next(h), got(n), got_next(h);
  std::vector<double> abs_x(n), abs_history(h), magnitude(n), magnitude_next(h);
  for (int64_t i = 0; i < n; ++i) abs_x[i] = std::fabs(ToDouble(x[i]));
  for (int64_t i = 0; i < h; ++i) abs_history[i] = std::fabs(ToDouble(history[i]));
  // s[0] is the step count, s[1] receives the next one.
  const auto stream_call = [&](const void* xs, void* ys, const void* hs, int64_t* s, void* next) {
    cma::Call call = CallOf<T>(g, window, edge, static_cast<const T*>(xs), static_cast<T*>(ys));
    call.stream = true;
    call.history = hs;
    call.seen = s;
    call.next_history = next;
    call.next_seen = s + 1;
    return call;
  };
  int64_t counts[2] = {seen, -1};
  const auto on_cpu = [&](const cma::Call& call) {
    std::vector<char> scratch(cma::CpuScratchBytes(call));
    cma::ComputeOnCpu(call, scratch.data(), 1, [](int64_t, const auto&) {});
  };
  on_cpu(stream_call(x.data(), expected.data(), history.data(), counts, expected_next.data()));
  cma::Call magnitude_call = stream_call(abs_x.data(), magnitude.data(), abs_history.data(), counts,
                                         magnitude_next.data());
  magnitude_call.dtype = cma::DType::kFloat64;
  on_cpu(magnitude_call);
  T *dx, *dy, *dh, *dnext;
  int64_t* dseen;
  void* scratch;
  CHECK_CUDA(cudaMalloc(&dx, n * sizeof(T) + 1));
  CHECK_CUDA(cudaMalloc(&dy, n * sizeof(T) + 1));
  CHECK_CUDA(cudaMalloc(&dh, h * sizeof(T) + 1));
  CHECK_CUDA(cudaMalloc(&dnext, h * sizeof(T) + 1));
  CHECK_CUDA(cudaMalloc(&dseen, 2 * sizeof(int64_t)));
  CHECK_CUDA(cudaMemcpy(dx, x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dh, history.data(), h * sizeof(T), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dseen, &seen, sizeof(int64_t), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dy, 0xFF, n * sizeof(T)));
  const cma::Call call = stream_call(dx, dy, dh, dseen, dnext);
  const int64_t scratch_bytes = cma::GpuScratchBytes(call);
  CHECK_CUDA(cudaMalloc(&scratch, scratch_bytes + 1));
  CHECK_CUDA(cudaMemset(scratch, 0x7B, scratch_bytes + 1));
  CHECK_LAUNCH(cma::LaunchOnGpu(call, nullptr, scratch));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(got.data(), dy, n * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(got_next.data(), dnext, h * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(counts, dseen, 2 * sizeof(int64_t), cudaMemcpyDeviceToHost));
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(dy), static_cast<void*>(dh),
                  static_cast<void*>(dnext), static_cast<void*>(dseen), scratch}) {
    CHECK_CUDA(cudaFree(p));
  }
  if (std::string error = CompareToCpu(expected, got, magnitude); !error.empty()) return error;
  if (h > 0 && std::memcmp(got_next.data(), expected_next.data(), h * sizeof(T)) != 0) {
    return "the next state differs from the CPU's";
  }
  if (counts[1] != seen + g.steps) return "the next step count is wrong";
  return "";
}

// Packed sequences on the GPU (ids in device memory) against the CPU core. Empty: passed.
template <typename T>
std::string CheckSegments(cma::Geometry g, int64_t window, cma::Edge edge, std::mt19937_64& rng) {
  const std::vector<T> x = MakeInput<T>(Case{g, window, edge, true, cma::GpuKernel::kAuto}, rng);
  const int64_t n = x.size();
  std::vector<int64_t> ids(g.outer * g.steps);
  for (size_t k = 0; k < ids.size(); ++k) ids[k] = k == 0 || rng() % 50 ? (k ? ids[k - 1] : 0) : k;
  std::vector<T> expected(n), got(n);
  std::vector<double> abs_x(n), magnitude(n);
  for (int64_t i = 0; i < n; ++i) abs_x[i] = std::fabs(ToDouble(x[i]));
  const auto call_of = [&](const void* xs, void* ys, const int64_t* id_data) {
    cma::Call call = CallOf<T>(g, window, edge, static_cast<const T*>(xs), static_cast<T*>(ys));
    call.ids_kind = cma::Call::Ids::kInt64;
    call.segment_ids = id_data;
    return call;
  };
  const auto serial = [](int64_t, const auto&) {};
  cma::ComputeOnCpu(call_of(x.data(), expected.data(), ids.data()), nullptr, 1, serial);
  cma::Call magnitude_call = call_of(abs_x.data(), magnitude.data(), ids.data());
  magnitude_call.dtype = cma::DType::kFloat64;
  cma::ComputeOnCpu(magnitude_call, nullptr, 1, serial);
  T *dx, *dy;
  int64_t* dids;
  CHECK_CUDA(cudaMalloc(&dx, n * sizeof(T) + 1));
  CHECK_CUDA(cudaMalloc(&dy, n * sizeof(T) + 1));
  CHECK_CUDA(cudaMalloc(&dids, ids.size() * sizeof(int64_t) + 1));
  CHECK_CUDA(cudaMemcpy(dx, x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dids, ids.data(), ids.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dy, 0xFF, n * sizeof(T)));
  CHECK_LAUNCH(cma::LaunchOnGpu(call_of(dx, dy, dids), nullptr, nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(got.data(), dy, n * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(dx));
  CHECK_CUDA(cudaFree(dy));
  CHECK_CUDA(cudaFree(dids));
  return CompareToCpu(expected, got, magnitude);
}

template <typename T>
void RunSegments(int* passed, int* failed) {
  std::mt19937_64 rng(11);
  for (const cma::Geometry g : {cma::Geometry{1, 5000, 1}, cma::Geometry{2, 700, 40}}) {
    for (const int64_t window : {1, 3, 100}) {
      for (const cma::Edge edge : {cma::Edge::kZeros, cma::Edge::kPartial}) {
        const std::string error = CheckSegments<T>(g, window, edge, rng);
        if (error.empty()) {
          ++*passed;
        } else {
          ++*failed;
          std::printf("FAIL %s segments [%lld, %lld, %lld] W=%lld edge=%s: %s\n", InfoOf<T>().name,
                      (long long)g.outer, (long long)g.steps, (long long)g.inner, (long long)window,
                      cma::NameOf(edge), error.c_str());
        }
      }
    }
  }
}

template <typename T>
void RunStreams(int* passed, int* failed) {
  std::mt19937_64 rng(7);
  for (const cma::Geometry g : {cma::Geometry{1, 5000, 1}, cma::Geometry{3, 1, 8},
                                cma::Geometry{2, 700, 40}, cma::Geometry{4, 30, 3}}) {
    for (const int64_t window : {1, 3, 32, 100, 2000}) {
      for (const cma::Edge edge : {cma::Edge::kZeros, cma::Edge::kPartial}) {
        for (const int64_t seen : {int64_t{0}, int64_t{2}, int64_t{10000}}) {
          const std::string error = CheckStream<T>(g, window, edge, seen, rng);
          if (error.empty()) {
            ++*passed;
          } else {
            ++*failed;
            std::printf("FAIL %s stream [%lld, %lld, %lld] W=%lld edge=%s seen=%lld: %s\n",
                        InfoOf<T>().name, (long long)g.outer, (long long)g.steps,
                        (long long)g.inner, (long long)window, cma::NameOf(edge), (long long)seen,
                        error.c_str());
          }
        }
      }
    }
  }
}

template <typename T>
void RunMatrix(bool quick, int* passed, int* failed) {
  const std::vector<cma::Geometry> shapes =
      quick ? std::vector<cma::Geometry>{{1, 100000, 1}, {3, 500, 40}, {2, 300, 3}}
            : std::vector<cma::Geometry>{{1, 1 << 20, 1}, {4, 20000, 3}, {2, 3000, 32},
                                         {3, 2000, 100},  {2, 64, 1024}, {5, 1, 7},
                                         {1, 2, 1},       {2, 0, 4},     {1, 70000, 2}};
  const std::vector<int64_t> windows =
      quick ? std::vector<int64_t>{1, 3, 1000, 5000}
            : std::vector<int64_t>{1, 2, 3, 7, 32, 33, 1000, 5000, 100000, int64_t{1} << 40};
  std::mt19937_64 rng(42);
  for (const auto& shape : shapes) {
    for (int64_t window : windows) {
      for (cma::Edge edge : {cma::Edge::kZeros, cma::Edge::kPartial}) {
        for (bool specials : {false, true}) {
          // The launcher's choice, and where it is the direct kernel also the one that takes over
          // above its limit (the range over which the limits may be tuned).
          std::vector<cma::GpuKernel> kernels = {cma::GpuKernel::kAuto};
          const cma::Call call = CallOf<T>(shape, window, edge, nullptr, nullptr);
          if (cma::ChooseGpuKernel(call) == cma::GpuKernel::kDirect) {
            kernels.push_back(shape.inner < cma::kTileMaxInner ? cma::GpuKernel::kTileScan
                                                               : cma::GpuKernel::kRunning);
          }
          for (cma::GpuKernel kernel : kernels) {
            const Case c{shape, window, edge, specials, kernel};
            const std::string error = Check<T>(c, rng);
            if (error.empty()) {
              ++*passed;
            } else {
              ++*failed;
              std::printf("FAIL %s [%lld, %lld, %lld] W=%lld edge=%s specials=%d kernel=%s: %s\n",
                          InfoOf<T>().name, (long long)shape.outer, (long long)shape.steps,
                          (long long)shape.inner, (long long)window,
                          edge == cma::Edge::kZeros ? "zeros" : "partial", specials,
                          cma::GpuKernelName(cma::ResolveGpuKernel(kernel, call)), error.c_str());
            }
          }
        }
      }
    }
  }
}

float MedianMs(std::vector<float> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

template <typename Launch>
float TimeMs(Launch launch, int repeats) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  launch();  // warm-up
  std::vector<float> samples;
  for (int r = 0; r < repeats; ++r) {
    CHECK_CUDA(cudaEventRecord(start));
    launch();
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    samples.push_back(ms);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return MedianMs(samples);
}

// Variants timed beside the shipped kernels, to choose between them from data (not shipped): the
// direct kernel with other sums and group sizes, the running kernel with other span lengths.
template <typename T, typename Sum, int kGroup>
__global__ void DirectVariantKernel(cma::Call call, const T* __restrict__ x, T* __restrict__ y) {
  cma::DirectMeansOfThread<T, Sum, kGroup>(
      call, x, y, static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
      static_cast<int64_t>(gridDim.x) * blockDim.x);
}

template <typename T>
__global__ void RunningVariantKernel(cma::Plan plan, const T* __restrict__ x, T* __restrict__ y) {
  const int64_t grid_threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t unit = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       unit < plan.num_units; unit += grid_threads) {
    cma::SumOf<T> acc;
    cma::ComputeUnit<T>(plan, x, y, unit, &acc);
  }
}

int SmCount() {
  int device = 0, count = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

// What a timed row runs: the shipped launcher's choice or a forced kernel, or a variant.
enum class Variant {
  kShipped,
  kDirectCompensated2,  // the direct kernel with the running kernels' compensated sums
  kDirectPlain1,        // other numbers of outputs per thread
  kDirectPlain4,
  kRunningSpan64,  // the running kernel with spans of exactly this many steps
  kRunningSpan256,
  kRunningSpan1024,
};
const char* VariantName(Variant v) {
  switch (v) {
    case Variant::kDirectCompensated2:
      return "direct/comp2";
    case Variant::kDirectPlain1:
      return "direct/plain1";
    case Variant::kDirectPlain4:
      return "direct/plain4";
    case Variant::kRunningSpan64:
      return "running/span64";
    case Variant::kRunningSpan256:
      return "running/span256";
    case Variant::kRunningSpan1024:
      return "running/span1024";
    default:
      return "";
  }
}

template <typename T>
void LaunchVariant(Variant v, const cma::Call& call) {
  const T* x = static_cast<const T*>(call.x);
  T* y = static_cast<T*>(call.y);
  const int sm = SmCount();
  const int64_t n = call.Elements();
  const auto direct = [&](auto kernel, int group) {
    kernel<<<cma::GridSize(cma::CeilDiv(n, group), sm), cma::kGpuThreadsPerBlock>>>(call, x, y);
  };
  const auto running = [&](int64_t span) {
    cma::Plan plan = cma::MakeGpuPlan(call);
    plan.span_steps = cma::Min64(call.view.steps, span);
    plan.spans_per_row = cma::CeilDiv(call.view.steps, plan.span_steps);
    plan.num_units = call.view.outer * plan.spans_per_row * plan.lane_groups_per_row;
    RunningVariantKernel<T>
        <<<cma::GridSize(plan.num_units, sm), cma::kGpuThreadsPerBlock>>>(plan, x, y);
  };
  switch (v) {
    case Variant::kDirectCompensated2:
      return direct(DirectVariantKernel<T, cma::CompensatedSum, 2>, 2);
    case Variant::kDirectPlain1:
      return direct(DirectVariantKernel<T, cma::SplitSumOf<T>, 1>, 1);
    case Variant::kDirectPlain4:
      return direct(DirectVariantKernel<T, cma::SplitSumOf<T>, 4>, 4);
    case Variant::kRunningSpan64:
      return running(64);
    case Variant::kRunningSpan256:
      return running(256);
    case Variant::kRunningSpan1024:
      return running(1024);
    default:
      return;
  }
}

struct BenchOptions {
  cma::Edge edge = cma::Edge::kZeros;
  bool nan_first = false;  // x[0] is NaN: the careful redo reaches every output with W >= steps
  cma::GpuKernel kernel = cma::GpuKernel::kAuto;
  Variant variant = Variant::kShipped;
  double mean_length = 0;  // > 0: packed sequences (int32 ids) of about this mean length
};

// One row of the speed table: the op's median time against a device-to-device copy of the same
// bytes timed just before it, and the op's outputs checked against the CPU core on a sample of
// rows first (a variant that computes something else must not look fast).
template <typename T>
void Benchmark(cma::Geometry g, int64_t window, int repeats, BenchOptions o, int* passed,
               int* failed) {
  const int64_t n = g.outer * g.steps * g.inner;
  const size_t bytes = n * sizeof(T);
  T *dx = nullptr, *dy = nullptr;
  int32_t* dids = nullptr;
  void* scratch = nullptr;
  CHECK_CUDA(cudaMalloc(&dx, bytes));
  CHECK_CUDA(cudaMalloc(&dy, bytes));
  cma::Call call = CallOf<T>(g, window, o.edge, dx, dy);
  std::mt19937_64 rng(5);
  if (o.mean_length > 0) {
    std::vector<int32_t> ids(g.outer * g.steps);
    std::uniform_int_distribution<int64_t> length(1, static_cast<int64_t>(2 * o.mean_length - 1));
    int64_t left = 0;
    int32_t id = 0;
    for (auto& v : ids) {
      if (left-- <= 0) left = length(rng) - 1, ++id;
      v = id;
    }
    CHECK_CUDA(cudaMalloc(&dids, ids.size() * sizeof(int32_t)));
    CHECK_CUDA(cudaMemcpy(dids, ids.data(), ids.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    call.ids_kind = cma::Call::Ids::kInt32;
    call.segment_ids = dids;
  }
  CHECK_CUDA(cudaMalloc(&scratch, cma::GpuScratchBytes(call, o.kernel) + 1));
  // Ordinary data (normal, scale 10) in a sample of about 2^20 elements at the start, zeros
  // elsewhere: whole rows, or the first steps of row 0 (an output depends only on earlier steps).
  // The CPU reference on the sample takes most of the harness's time.
  const int64_t cap = int64_t{1} << 20, row = g.steps * g.inner;
  const cma::Geometry sample = row <= cap
                                   ? cma::Geometry{cma::Min64(g.outer, cap / row), g.steps, g.inner}
                                   : cma::Geometry{1, cma::Max64(1, cap / g.inner), g.inner};
  const int64_t sample_rows = sample.outer;
  std::vector<T> x = MakeInput<T>(Case{sample, window, o.edge, false, cma::GpuKernel::kAuto}, rng);
  if (o.nan_first) x[0] = static_cast<T>(NAN);
  CHECK_CUDA(cudaMemset(dx, 0, bytes));
  CHECK_CUDA(cudaMemcpy(dx, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
  const auto launch = [&] {
    if (o.variant == Variant::kShipped) {
      CHECK_LAUNCH(cma::LaunchOnGpu(call, nullptr, scratch, o.kernel));
    } else {
      LaunchVariant<T>(o.variant, call);
      CHECK_CUDA(cudaGetLastError());
    }
  };
  // Correctness of what is timed, on the sample rows.
  CHECK_CUDA(cudaMemset(dy, 0xFF, bytes));
  launch();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<T> got(x.size()), expected(x.size());
  std::vector<double> abs_x(x.size()), magnitude(x.size());
  CHECK_CUDA(cudaMemcpy(got.data(), dy, x.size() * sizeof(T), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < x.size(); ++i) abs_x[i] = std::fabs(ToDouble(x[i]));
  {
    cma::Call host = call;
    host.view = sample;
    std::vector<int32_t> host_ids;
    if (dids != nullptr) {
      host_ids.resize(sample_rows * g.steps);
      CHECK_CUDA(cudaMemcpy(host_ids.data(), dids, host_ids.size() * sizeof(int32_t),
                            cudaMemcpyDeviceToHost));
      host.segment_ids = host_ids.data();
    }
    const auto serial = [](int64_t, const auto&) {};
    host.x = x.data();
    host.y = expected.data();
    cma::ComputeOnCpu(host, nullptr, 1, serial);
    host.x = abs_x.data();
    host.y = magnitude.data();
    host.dtype = cma::DType::kFloat64;
    cma::ComputeOnCpu(host, nullptr, 1, serial);
  }
  const std::string error = CompareToCpu(expected, got, magnitude);
  error.empty() ? ++*passed : ++*failed;
  const float copy_ms = TimeMs(
      [&] { CHECK_CUDA(cudaMemcpyAsync(dy, dx, bytes, cudaMemcpyDeviceToDevice)); }, repeats);
  const float op_ms = TimeMs(launch, repeats);
  const double traffic = 2.0 * bytes;
  char shape[96];
  std::snprintf(shape, sizeof(shape), "[%lld, %lld, %lld]%s", (long long)g.outer,
                (long long)g.steps, (long long)g.inner, o.nan_first ? " NaN at 0" : "");
  char what[64];
  if (o.variant != Variant::kShipped) {
    std::snprintf(what, sizeof(what), "%s", VariantName(o.variant));
  } else {
    std::snprintf(what, sizeof(what), "%s%s",
                  cma::GpuKernelName(cma::ResolveGpuKernel(o.kernel, call)),
                  o.kernel == cma::GpuKernel::kAuto ? "" : " (forced)");
  }
  char extra[48] = "";
  if (o.mean_length > 0) std::snprintf(extra, sizeof(extra), " ids~%g", o.mean_length);
  std::printf("| %-8s | %s%s | %lld | %s | %s | %.4f | %.0f | %.4f | %.0f | %.2f |%s%s\n",
              InfoOf<T>().name, shape, extra, (long long)window, cma::NameOf(o.edge), what, op_ms,
              traffic / op_ms / 1e6, copy_ms, traffic / copy_ms / 1e6, op_ms / copy_ms,
              error.empty() ? "" : " WRONG: ", error.c_str());
  std::fflush(stdout);
  CHECK_CUDA(cudaFree(dx));
  CHECK_CUDA(cudaFree(dy));
  CHECK_CUDA(cudaFree(dids));
  CHECK_CUDA(cudaFree(scratch));
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device available\n");
    return 77;
  }
  cudaDeviceProp props;
  CHECK_CUDA(cudaGetDeviceProperties(&props, 0));
  int driver = 0, runtime = 0;
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  std::printf("device: %s (sm_%d%d, %d SMs), driver %d, runtime %d\n", props.name, props.major,
              props.minor, props.multiProcessorCount, driver, runtime);

  int passed = 0, failed = 0;
  RunMatrix<float>(quick, &passed, &failed);
  RunMatrix<double>(quick, &passed, &failed);
  RunMatrix<__half>(quick, &passed, &failed);
  RunMatrix<__nv_bfloat16>(quick, &passed, &failed);
  RunStreams<float>(&passed, &failed);
  RunStreams<double>(&passed, &failed);
  RunStreams<__half>(&passed, &failed);
  RunStreams<__nv_bfloat16>(&passed, &failed);
  RunSegments<float>(&passed, &failed);
  RunSegments<double>(&passed, &failed);
  RunSegments<__half>(&passed, &failed);
  RunSegments<__nv_bfloat16>(&passed, &failed);
  std::printf("correctness: %d passed, %d failed\n", passed, failed);

  std::printf(
      "\n| dtype | shape | W | edge | kernel | op ms | op GB/s | copy ms | copy GB/s | op/copy "
      "|\n");
  std::printf("|---|---|---:|---|---|---:|---:|---:|---:|---:|\n");
  const int repeats = quick ? 5 : 20;
  const auto bench = [&](auto type, cma::Geometry g, int64_t window, BenchOptions o = {}) {
    Benchmark<decltype(type)>(g, window, repeats, o, &passed, &failed);
  };
  // The layouts users run, every window from 1 to 2^40, float32, both edges.
  const std::vector<cma::Geometry> layouts =
      quick ? std::vector<cma::Geometry>{{64, 16384, 8}, {4, 4096, 64}}
            : std::vector<cma::Geometry>{{64, 16384, 8},  {1, 10000000, 1}, {256, 4096, 1},
                                         {16, 4096, 128}, {4096, 1024, 64}, {1, 1 << 28, 1}};
  const std::vector<int64_t> windows = {1, 3, 16, 32, 1024, 4096, int64_t{1} << 40};
  for (const auto& g : layouts) {
    for (const int64_t window : windows) {
      // The largest layout (beyond L2, as the earlier tables) for the middle windows only.
      if (g.steps == int64_t{1} << 28 && (window < 3 || window > 4096)) continue;
      for (const cma::Edge edge : {cma::Edge::kZeros, cma::Edge::kPartial}) {
        if (edge == cma::Edge::kPartial && window != 3 && window != 1024) continue;
        bench(float{}, g, window, {edge});
      }
    }
  }
  // Other dtypes.
  for (const auto& g : {layouts[0], layouts[quick ? 1 : 3]}) {
    for (const int64_t window : {int64_t{3}, int64_t{1024}}) {
      bench(__half{}, g, window);
      bench(__nv_bfloat16{}, g, window);
      bench(double{}, g, window);
    }
  }
  if (!quick) {
    // The careful redo at its worst, packed sequences.
    bench(float{}, {1, 1 << 24, 1}, int64_t{1} << 28, {cma::Edge::kZeros, true});
    for (const double mean : {64.0, 1000.0}) {
      for (const int64_t window : {int64_t{3}, int64_t{100}, int64_t{1024}}) {
        BenchOptions o;
        o.mean_length = mean;
        bench(float{}, {1, 10000000, 1}, window, o);
        bench(float{}, {64, 16384, 8}, window, o);
      }
    }
    // Direct sums against tile scans on narrow layouts, and against the running kernel on wide
    // ones, to set the kernel limits from data; the variants.
    for (const int64_t window : {4, 8, 16, 32, 64, 96, 128}) {
      for (const cma::Geometry g : {cma::Geometry{1, 1 << 28, 1}, cma::Geometry{64, 16384, 8},
                                    cma::Geometry{2048, 16384, 8}}) {
        BenchOptions o;
        for (const auto kernel : {cma::GpuKernel::kDirect, cma::GpuKernel::kTileScan}) {
          o.kernel = kernel;
          bench(float{}, g, window, o);
        }
        o.kernel = cma::GpuKernel::kAuto;
        for (const Variant v :
             {Variant::kDirectCompensated2, Variant::kDirectPlain1, Variant::kDirectPlain4}) {
          o.variant = v;
          bench(float{}, g, window, o);
        }
      }
    }
    for (const int64_t window : {1, 3, 8, 16, 32, 1024, 4096}) {
      for (const cma::Geometry g : {cma::Geometry{16, 4096, 128}, cma::Geometry{4096, 1024, 64},
                                    cma::Geometry{256, 4096, 256}}) {
        BenchOptions o;
        for (const auto kernel : {cma::GpuKernel::kDirect, cma::GpuKernel::kRunning}) {
          if (kernel == cma::GpuKernel::kDirect && window > 64) continue;
          o.kernel = kernel;
          bench(float{}, g, window, o);
        }
        o.kernel = cma::GpuKernel::kAuto;
        for (const Variant v :
             {Variant::kRunningSpan64, Variant::kRunningSpan256, Variant::kRunningSpan1024}) {
          o.variant = v;
          bench(float{}, g, window, o);
        }
      }
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
