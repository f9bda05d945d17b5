// The CPU core alone against the memory floor, one thread, warm buffers: ns per element of
// ComputeUnits beside a memcpy of the same bytes and a float -> double -> scaled -> float loop
// (the conversions any float64-accumulating kernel needs), timed interleaved in one process.
//
//   build/cma_core_bench [--quick]        (scripts/run core-bench builds and runs it)
//
// Prints the host and the core version it runs (CMA_CPU_VERSION picks another; ratios measured
// on one host do not carry over to another), then one row per case: medians of repeated calls,
// the best of several rounds, and the ratios to memcpy and to the scale loop.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cc/core/cpu.h"
#include "cc/core/plan.h"
#include "cc/core/types.h"

namespace cma = causal_moving_avg;

namespace {

std::string Host() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU", vector = "baseline";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0 && model == "unknown CPU") {
      model = line.substr(line.find(':') + 2);
    } else if (line.rfind("flags", 0) == 0) {
      vector = line.find(" avx512f") != std::string::npos ? "avx512f"
               : line.find(" avx2") != std::string::npos  ? "avx2"
                                                          : "baseline";
      break;
    }
  }
  return model + ", " + vector;
}

// Median seconds of `calls` calls; the best of `rounds` such medians, rounds interleaved across
// the methods by the caller.
double MedianSeconds(const std::function<void()>& call, int calls) {
  std::vector<double> samples;
  for (int c = 0; c < calls; ++c) {
    const auto start = std::chrono::steady_clock::now();
    call();
    samples.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(samples.begin(), samples.begin() + calls / 2, samples.end());
  return samples[calls / 2];
}

// The conversions a float64-accumulating kernel needs, and nothing else; not inlined, so the
// compiler cannot fold it into the timing loop.
__attribute__((noinline)) void ScaleLoop(const float* __restrict__ x, float* __restrict__ y,
                                         int64_t n, double scale) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(x[i]) * scale);
}

struct Case {
  cma::Geometry geometry;
  int64_t window;
  cma::Edge edge;
};

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int rounds = quick ? 2 : 5, calls = quick ? 5 : 15;
  std::vector<Case> cases;
  const cma::Geometry shapes[] = {
      {64, 16384, 8}, {1, 10'000'000, 1}, {16, 4096, 128}, {256, 4096, 1}};
  for (const cma::Geometry& g : shapes) {
    for (int64_t w : {3, 32, 1024, 4096}) {
      for (cma::Edge e : {cma::Edge::kZeros, cma::Edge::kPartial}) cases.push_back({g, w, e});
    }
  }
  std::printf(
      "host: %s; core version: %s; one thread, warm buffers, float32; best of %d rounds of "
      "%d-call medians\n",
      Host().c_str(), cma::CpuVersionName(cma::ActiveCpuVersion()), rounds, calls);
  std::printf(
      "| shape | W | edge | core ns/elem | memcpy ns/elem | scale ns/elem | core / memcpy | core / "
      "scale |\n");
  std::printf("|---|---:|---|---:|---:|---:|---:|---:|\n");
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  cma::Geometry last{0, 0, 0};
  std::vector<float> x, y;
  for (const Case& c : cases) {
    const int64_t n = c.geometry.outer * c.geometry.steps * c.geometry.inner;
    if (c.geometry.outer != last.outer || c.geometry.steps != last.steps ||
        c.geometry.inner != last.inner) {
      x.resize(n);
      y.assign(n, 0.0f);
      for (float& v : x) v = normal(rng);
      last = c.geometry;
    }
    const cma::Plan plan =
        cma::MakeCpuPlan({c.geometry, cma::DType::kFloat32, c.window, c.edge, x.data(), y.data()});
    const std::function<void()> methods[] = {
        [&] { cma::ComputeUnits<float>(plan, x.data(), y.data(), 0, plan.num_units); },
        [&] { std::memcpy(y.data(), x.data(), n * sizeof(float)); },
        [&] { ScaleLoop(x.data(), y.data(), n, 1.0 / 3.0); },
    };
    double best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; r < rounds; ++r) {
      for (int m = 0; m < 3; ++m) {
        methods[m]();  // warm
        best[m] = std::min(best[m], MedianSeconds(methods[m], calls));
      }
    }
    const double ns[3] = {best[0] * 1e9 / n, best[1] * 1e9 / n, best[2] * 1e9 / n};
    std::printf("| [%lld, %lld, %lld] | %lld | %s | %.3f | %.3f | %.3f | %.2f | %.2f |\n",
                (long long)c.geometry.outer, (long long)c.geometry.steps,
                (long long)c.geometry.inner, (long long)c.window, cma::NameOf(c.edge), ns[0], ns[1],
                ns[2], ns[0] / ns[1], ns[0] / ns[2]);
    std::fflush(stdout);
  }
  return 0;
}
