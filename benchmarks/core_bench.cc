// The CPU core alone against the memory floor, one thread, warm buffers: ns per element of
// ComputeUnits beside a memcpy of the same bytes, a float -> double -> scaled -> float loop
// (the conversions any float64-accumulating kernel needs) and the compute floor of a moving
// average on this host (AVX2 hosts: running sums with independent units in vector lanes,
// RunningSumFloor), timed interleaved in one process; then packed sequences with and without ids.
//
//   build/cma_core_bench [--quick]        (scripts/run core-bench builds and runs it)
//
// Prints the host and the core version it runs (CMA_CPU_VERSION picks another; ratios measured
// on one host do not carry over to another), then one row per case: medians of repeated calls,
// the best of several rounds, and the ratios to memcpy, to the scale loop and to the floor.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
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

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CMA_BENCH_HAS_FLOOR 1
#else
#define CMA_BENCH_HAS_FLOOR 0
#endif

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

#if CMA_BENCH_HAS_FLOOR
// The compute floor: the earlier running sums' arithmetic (float -> double, add the input
// entering, subtract the one leaving, times 1/W, double -> float; no FMA), "zeros" edge, with
// independent units side by side in the lanes of four-double vectors and several chains
// interleaved, which is as little work per element as a float64-accumulating moving average
// does. Rows of 4k channels: channel groups as lanes, two rows together. One-channel rows: eight
// units (eight rows, or eight segments of one long row, each re-anchored from the inputs before
// it) transposed in registers four steps at a time.
typedef double Floor4 __attribute__((vector_size(32)));

__attribute__((target("avx2"), noinline)) void FloorChannels(const float* x, float* y,
                                                             int64_t outer, int64_t steps,
                                                             int64_t inner, int64_t window,
                                                             double inv) {
  std::vector<double> sums(2 * inner);  // (a vector of Floor4 would not be 32-byte aligned)
  const Floor4 scale = {inv, inv, inv, inv};
  for (int64_t r0 = 0; r0 < outer; r0 += 2) {
    const int64_t rows = std::min<int64_t>(2, outer - r0);
    std::fill(sums.begin(), sums.end(), 0.0);
    for (int64_t t = 0; t < steps; ++t) {
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + ((r0 + r) * steps + t) * inner;
        float* yr = y + ((r0 + r) * steps + t) * inner;
        double* s = sums.data() + r * inner;
        for (int64_t g = 0; g < inner / 4; ++g) {
          Floor4 sum;
          std::memcpy(&sum, s + 4 * g, sizeof sum);
          sum += _mm256_cvtps_pd(_mm_loadu_ps(xr + 4 * g));
          if (t >= window) sum -= _mm256_cvtps_pd(_mm_loadu_ps(xr - window * inner + 4 * g));
          std::memcpy(s + 4 * g, &sum, sizeof sum);
          _mm_storeu_ps(yr + 4 * g, _mm256_cvtpd_ps(sum * scale));
        }
      }
    }
  }
}

// Eight one-channel units of n steps each at xs[u], ys[u], with avail[u] inputs before step 0
// that count (the rest are zeros).
__attribute__((target("avx2"), noinline)) void FloorUnits8(const float* const* xs, float* const* ys,
                                                           const int64_t* avail, int64_t n,
                                                           int64_t window, double inv) {
  Floor4 s[2];
  int64_t first[8];  // the first step each unit's sum holds
  for (int u = 0; u < 8; ++u) {
    first[u] = -std::min(window - 1, avail[u]);
    double anchor = 0.0;
    for (int64_t t = first[u]; t < 0; ++t) anchor += static_cast<double>(xs[u][t]);
    s[u / 4][u % 4] = anchor;
  }
  const Floor4 scale = {inv, inv, inv, inv};
  const int64_t n4 = n / 4 * 4;
  for (int64_t k = 0; k < n4; k += 4) {
    for (int g = 0; g < 2; ++g) {
      const float* const* x4 = xs + 4 * g;
      __m128 in[4] = {_mm_loadu_ps(x4[0] + k), _mm_loadu_ps(x4[1] + k), _mm_loadu_ps(x4[2] + k),
                      _mm_loadu_ps(x4[3] + k)};
      _MM_TRANSPOSE4_PS(in[0], in[1], in[2], in[3]);
      __m128 out[4], leaving[4];
      // Step k + i - W leaves unit j if it was added: k + i - W >= first[j].
      int64_t latest_first = INT64_MIN, earliest_first = INT64_MAX;
      for (int j = 0; j < 4; ++j) {
        latest_first = std::max(latest_first, first[4 * g + j]);
        earliest_first = std::min(earliest_first, first[4 * g + j]);
      }
      if (k - window >= latest_first) {
        for (int j = 0; j < 4; ++j) leaving[j] = _mm_loadu_ps(x4[j] + k - window);
        _MM_TRANSPOSE4_PS(leaving[0], leaving[1], leaving[2], leaving[3]);
      } else if (k + 3 - window < earliest_first) {
        for (int i = 0; i < 4; ++i) leaving[i] = _mm_setzero_ps();
      } else {
        for (int i = 0; i < 4; ++i) {
          float v[4];
          for (int j = 0; j < 4; ++j) {
            const int64_t t = k + i - window;
            v[j] = t >= first[4 * g + j] ? x4[j][t] : 0.0f;
          }
          leaving[i] = _mm_loadu_ps(v);
        }
      }
      for (int i = 0; i < 4; ++i) {
        s[g] += _mm256_cvtps_pd(in[i]);
        s[g] -= _mm256_cvtps_pd(leaving[i]);
        out[i] = _mm256_cvtpd_ps(s[g] * scale);
      }
      _MM_TRANSPOSE4_PS(out[0], out[1], out[2], out[3]);
      for (int j = 0; j < 4; ++j) _mm_storeu_ps(ys[4 * g + j] + k, out[j]);
    }
  }
  for (int u = 0; u < 8; ++u) {  // the last n % 4 steps
    double sum = s[u / 4][u % 4];
    for (int64_t t = n4; t < n; ++t) {
      sum += static_cast<double>(xs[u][t]);
      if (t - window >= first[u]) sum -= static_cast<double>(xs[u][t - window]);
      ys[u][t] = static_cast<float>(sum * inv);
    }
  }
}

constexpr int64_t kFloorStagger = 24;  // floats

void RunningSumFloor(const float* x, float* y, const cma::Geometry& g, int64_t window) {
  const double inv = 1.0 / static_cast<double>(window);
  if (g.inner % 4 == 0) return FloorChannels(x, y, g.outer, g.steps, g.inner, window, inv);
  // One channel: the rows, end to end, as one sequence cut into eight segments whose starts are
  // staggered (units a multiple of 4 KiB apart would stall on aliased addresses); for several
  // rows windows then run across rows, the same work per element as a row of its own.
  const float* xs[8];
  float* ys[8];
  int64_t avail[8];
  const int64_t n = g.outer * g.steps, length = n / 8 - 8 * kFloorStagger;
  for (int u = 0; u < 8; ++u) {
    avail[u] = u * (n / 8 + kFloorStagger);
    xs[u] = x + avail[u], ys[u] = y + avail[u];
  }
  FloorUnits8(xs, ys, avail, length, window, inv);
}
#endif

struct Case {
  cma::Geometry geometry;
  int64_t window;
  cma::Edge edge;
};

// Packed sequences, [1, 10^7, 1] and [64, 16384, 8] with int32 ids of random lengths (uniform in
// [1, 2 x mean), each row cut on its own): the core with ids (ComputeSequences) beside the core
// without them on the same inputs.
void Packed(int rounds, int calls) {
  std::printf(
      "\n| packed shape | mean length | W | edge | with ids ns/elem | without ids ns/elem | with / "
      "without |\n|---|---:|---:|---|---:|---:|---:|\n");
  for (const cma::Geometry g : {cma::Geometry{1, 10'000'000, 1}, cma::Geometry{64, 16384, 8}}) {
    const int64_t n = g.outer * g.steps * g.inner, positions = g.outer * g.steps;
    std::mt19937 rng(2);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(n), y(n);
    for (float& v : x) v = normal(rng);
    std::vector<int32_t> ids(positions);
    for (const int64_t mean : {1000, 64, 3}) {
      for (int64_t row = 0; row < g.outer; ++row) {
        int32_t id = 0;
        for (int64_t t = 0; t < g.steps; ++id) {
          const int64_t end =
              std::min<int64_t>(g.steps, t + 1 + static_cast<int64_t>(rng() % (2 * mean - 1)));
          for (; t < end; ++t) ids[row * g.steps + t] = id;
        }
      }
      for (const int64_t w : {3, 16, 1024}) {
        for (const cma::Edge e : {cma::Edge::kZeros, cma::Edge::kPartial}) {
          cma::Call call{g, cma::DType::kFloat32, w, e, x.data(), y.data()};
          const cma::Plan plan = cma::MakeCpuPlan(call);
          call.ids_kind = cma::Call::Ids::kInt32;
          call.segment_ids = ids.data();
          const std::function<void()> methods[] = {
              [&] { cma::ComputeSequences<float>(call, 0, positions); },
              [&] { cma::ComputeUnits<float>(plan, x.data(), y.data(), 0, plan.num_units); }};
          double best[2] = {1e30, 1e30};
          for (int r = 0; r < rounds; ++r) {
            for (int m = 0; m < 2; ++m) {
              methods[m]();  // warm
              best[m] = std::min(best[m], MedianSeconds(methods[m], calls));
            }
          }
          std::printf("| [%lld, %lld, %lld] | %lld | %lld | %s | %.3f | %.3f | %.2f |\n",
                      (long long)g.outer, (long long)g.steps, (long long)g.inner, (long long)mean,
                      (long long)w, cma::NameOf(e), best[0] * 1e9 / n, best[1] * 1e9 / n,
                      best[0] / best[1]);
          std::fflush(stdout);
        }
      }
    }
  }
}

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
#if CMA_BENCH_HAS_FLOOR
  const bool floor = __builtin_cpu_supports("avx2");
#else
  const bool floor = false;
#endif
  std::printf(
      "| shape | W | edge | core ns/elem | memcpy ns/elem | scale ns/elem | floor ns/elem | core / "
      "memcpy | core / scale | core / floor |\n");
  std::printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  cma::Geometry last{0, 0, 0};
  std::vector<float> x, y, core_y;
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
#if CMA_BENCH_HAS_FLOOR
        [&] { RunningSumFloor(x.data(), y.data(), c.geometry, c.window); },
#endif
    };
    const int count = floor ? 4 : 3;
#if CMA_BENCH_HAS_FLOOR
    // The floor computes the moving average (rows of one channel: of the rows end to end).
    const cma::Geometry& g = c.geometry;
    if (floor && c.edge == cma::Edge::kZeros && (g.inner % 4 == 0 || g.outer * g.inner == 1)) {
      methods[0]();
      core_y = y;
      methods[3]();
      double worst = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        worst = std::max(worst, static_cast<double>(std::fabs(y[i] - core_y[i])));
      }
      if (!(worst <= 1e-5)) {
        std::fprintf(stderr, "the floor differs from the core by %g\n", worst);
        return 1;
      }
    }
#endif
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    for (int r = 0; r < rounds; ++r) {
      for (int m = 0; m < count; ++m) {
        methods[m]();  // warm
        best[m] = std::min(best[m], MedianSeconds(methods[m], calls));
      }
    }
    double ns[4];
    for (int m = 0; m < 4; ++m) ns[m] = best[m] * 1e9 / n;
    char floor_ns[32] = "n/a", core_over_floor[32] = "n/a";
    if (floor) {
      std::snprintf(floor_ns, sizeof floor_ns, "%.3f", ns[3]);
      std::snprintf(core_over_floor, sizeof core_over_floor, "%.2f", ns[0] / ns[3]);
    }
    std::printf("| [%lld, %lld, %lld] | %lld | %s | %.3f | %.3f | %.3f | %s | %.2f | %.2f | %s |\n",
                (long long)c.geometry.outer, (long long)c.geometry.steps,
                (long long)c.geometry.inner, (long long)c.window, cma::NameOf(c.edge), ns[0], ns[1],
                ns[2], floor_ns, ns[0] / ns[1], ns[0] / ns[2], core_over_floor);
    std::fflush(stdout);
  }
  Packed(rounds, calls);
  return 0;
}
