// Tests of the TensorFlow-free core against a plain reference, with no TensorFlow in the process:
// the CPU plan, the GPU's running-sum plan, the GPU's direct sums and its tile scans (emulated
// thread by thread), all run here on the host, so the arithmetic and indexing the CUDA kernels use
// are checked on machines without a GPU (and under sanitizers). The checks are grouped in named
// cases, each with its own random seed (from its name), so a case gets the same inputs alone or
// in the full run. With no argument every case runs; `--list` prints the cases' names; `--filter
// SUBSTRING` (repeatable) runs only the cases whose name contains one of them, and a filter that
// matches no case is an error (exit 2). Prints one line per failure, naming its case, and last "N
// passed, N failed"; exits 1 on any failure.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cc/core/call.h"
#include "cc/core/cpu.h"
#include "cc/core/gpu_direct.h"
#include "cc/core/gpu_grid.h"
#include "cc/core/host_thread_block.h"
#include "cc/core/numerics.h"
#include "cc/core/plan.h"
#include "cc/core/stream.h"
#include "cc/core/tile_scan.h"
#include "cc/core/types.h"

namespace cma = causal_moving_avg;

namespace {

int passed = 0;
int failed = 0;
const char* current_case = "";  // the name of the case running, for failure lines

// Prints a failure line, "FAIL <case>: <message>"; counting the failure is the caller's.
__attribute__((format(printf, 1, 2))) void PrintFailure(const char* format, ...) {
  std::printf("FAIL %s: ", current_case);
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
}

// The call the plans and kernels take, for a float32 or float64 x (x and y stay empty where only a
// plan is made: the plans' users take them as arguments).
template <typename T>
cma::Call CallOf(cma::Geometry g, int64_t window, cma::Edge edge, const T* x = nullptr,
                 T* y = nullptr) {
  return {g, sizeof(T) == 8 ? cma::DType::kFloat64 : cma::DType::kFloat32, window, edge, x, y};
}

// The definition, summed directly in long double; non-finite values propagate as in any sum.
std::vector<long double> Reference(const std::vector<double>& x, cma::Geometry g, int64_t window,
                                   cma::Edge edge) {
  std::vector<long double> y(x.size());
  for (int64_t o = 0; o < g.outer; ++o) {
    for (int64_t t = 0; t < g.steps; ++t) {
      for (int64_t i = 0; i < g.inner; ++i) {
        long double sum = 0;
        const int64_t first = t - window + 1 > 0 ? t - window + 1 : 0;
        for (int64_t j = first; j <= t; ++j) sum += x[(o * g.steps + j) * g.inner + i];
        const int64_t divisor = edge == cma::Edge::kPartial ? t - first + 1 : window;
        y[(o * g.steps + t) * g.inner + i] = sum / divisor;
      }
    }
  }
  return y;
}

// Each output within `tolerance` of its window's magnitude (plus `floor`), non-finite ones equal.
template <typename T>
void Expect(const std::string& name, const std::vector<T>& got,
            const std::vector<long double>& want, const std::vector<long double>& magnitude,
            double tolerance, long double floor = 1e-300L) {
  for (size_t i = 0; i < got.size(); ++i) {
    const long double g = got[i], w = want[i];
    const bool same_special = (std::isnan(w) && std::isnan(g)) || (std::isinf(w) && g == w);
    const bool close = std::isfinite(w) && std::isfinite(g) &&
                       std::fabs(g - w) <= tolerance * magnitude[i] + floor;
    if (!same_special && !close) {
      PrintFailure("%s: element %zu got %.17Lg want %.17Lg", name.c_str(), i, g, w);
      ++failed;
      return;
    }
  }
  ++passed;
}

// The GPU's tile scan for a narrow layout, both passes, run by the host executor.
template <typename T>
void TileScanOnHost(const cma::Call& call, const T* x, T* y) {
  using Sum = cma::SumOf<T>;
  const cma::TileScanPlan plan = cma::MakeTileScanPlan<Sum>(call);
  std::vector<double> shared(cma::TileScratch<Sum>::kBytes / sizeof(double) + 1);
  const auto scratch =
      cma::TileScratch<Sum>::Carve(reinterpret_cast<unsigned char*>(shared.data()));
  std::vector<cma::CarefulSum<Sum>> sums(cma::TileSumsBytes<Sum>(plan) /
                                         sizeof(cma::CarefulSum<Sum>));
  const cma::HostThreadBlock block;
  for (int64_t tile = 0; tile < plan.num_tiles && plan.whole_tiles > 0; ++tile) {
    cma::TileSums(block, plan, x, sums.data(), tile, scratch);
  }
  // Tiles are independent: run them last to first.
  for (int64_t tile = plan.num_tiles - 1; tile >= 0; --tile) {
    cma::TileMeans(block, plan, x, y, sums.data(), tile, scratch);
  }
}

// What a case does to its normal(100, 10) inputs: adds NaN/Inf or pairs near the largest double,
// or scales them below 2^-958 (where a sum scaled by 2^-64 would lose their bits) and adds those;
// or adds spikes and sentinels (1e30, the type's largest value, 1e9, -999999) that the windows
// after them must not feel.
enum class Extra { kNone, kSpecials, kHuge, kTinySpecials, kTinyHuge, kSpikes };

// The plan's units as the GPU's running kernel runs them (one thread per unit), on the host.
template <typename T>
void RunningUnitsOnHost(const cma::Plan& plan, const T* x, T* y, int64_t begin, int64_t end) {
  for (int64_t unit = begin; unit < end; ++unit) {
    cma::SumOf<T> acc;
    cma::ComputeUnit<T>(plan, x, y, unit, &acc);
  }
}

// All of a plan's units: the CPU's (cpu) or the GPU's running kernel's.
template <typename T>
void RunPlan(bool cpu, const cma::Plan& plan, const T* x, T* y) {
  if (cpu) {
    cma::ComputeUnits<T>(plan, x, y, 0, plan.num_units);
  } else {
    RunningUnitsOnHost<T>(plan, x, y, 0, plan.num_units);
  }
}

template <typename T>
void CheckCase(cma::Geometry g, int64_t window, cma::Edge edge, Extra extra, std::mt19937_64& rng) {
  const int64_t n = g.outer * g.steps * g.inner;
  std::normal_distribution<double> normal(100.0, 10.0);
  std::vector<double> x64(n);
  const bool tiny = extra == Extra::kTinySpecials || extra == Extra::kTinyHuge;
  for (auto& v : x64) v = static_cast<T>(tiny ? std::ldexp(normal(rng), -1000) : normal(rng));
  if ((extra == Extra::kSpecials || extra == Extra::kTinySpecials) && n > 0) {
    const double values[] = {NAN, INFINITY, -INFINITY, INFINITY};
    for (int k = 0; k < 8; ++k) x64[rng() % n] = values[k % 4];
  }
  if ((extra == Extra::kHuge || extra == Extra::kTinyHuge) && n > 0) {
    // Pairs of consecutive steps near the largest double: their window sums overflow double, their
    // means do not (the reference sums in long double).
    for (int k = 0; k < 4; ++k) {
      const int64_t i = rng() % n;
      x64[i] = k % 2 ? -1.5e308 : 1.5e308;
      if (i + g.inner < n) x64[i + g.inner] = x64[i];
    }
  }
  if (extra == Extra::kSpikes && n > 0) {
    // float's largest value for both types (the common sentinel); float64's own overflows a
    // window's sum, which the "huge" cases check.
    const double float_max = std::numeric_limits<float>::max();
    const double spikes[] = {1e30, -float_max, 1e9, -999999.0, float_max};
    for (int k = 0; k < 6; ++k) x64[rng() % n] = spikes[k % 5];
  }
  std::vector<T> x(x64.begin(), x64.end());
  std::vector<double> abs_x(n);
  for (int64_t i = 0; i < n; ++i) abs_x[i] = std::fabs(x64[i]);
  const auto want = Reference(x64, g, window, edge);
  const auto magnitude = Reference(abs_x, g, window, edge);
  const double tolerance = sizeof(T) == 8 ? 1e-14 : 1.2e-7;
  // Tiny cases allow only the output's own rounding when it is subnormal (half of 2^-1074): a
  // larger floor would hide every bit a sum scaled by 2^-64 loses.
  const long double floor = tiny ? std::ldexp(1.0L, -1075) : 1e-300L;
  const char* extra_names[] = {"", " specials", " huge", " tiny specials", " tiny huge", " spikes"};
  char label[160];
  std::snprintf(label, sizeof(label), "%s [%lld,%lld,%lld] W=%lld %s%s",
                sizeof(T) == 8 ? "f64" : "f32", (long long)g.outer, (long long)g.steps,
                (long long)g.inner, (long long)window, cma::NameOf(edge),
                extra_names[static_cast<int>(extra)]);
  if (n == 0) return;

  const std::function<cma::Plan()> plans[] = {
      [&] { return cma::MakeCpuPlan(CallOf<T>(g, window, edge)); },
      [&] { return cma::MakeGpuPlan(CallOf<T>(g, window, edge)); },
  };
  // The CPU's split windows, and the GPU's running kernel emulated on the host.
  const char* plan_names[] = {"cpu", "gpu-running"};
  const auto run = [&](int p, const cma::Plan& plan, T* y, int64_t begin, int64_t end) {
    if (p == 0) {
      cma::ComputeUnits<T>(plan, x.data(), y, begin, end);
    } else {
      RunningUnitsOnHost<T>(plan, x.data(), y, begin, end);
    }
  };
  for (int p = 0; p < 2; ++p) {
    const cma::Plan plan = plans[p]();
    std::vector<T> y(n, static_cast<T>(NAN));
    run(p, plan, y.data(), 0, plan.num_units);
    Expect(std::string(plan_names[p]) + " " + label, y, want, magnitude, tolerance, floor);
    // Units are independent: any split and order gives bitwise the same output.
    std::vector<T> reversed(n, static_cast<T>(0));
    for (int64_t u = plan.num_units - 1; u >= 0; --u) run(p, plan, reversed.data(), u, u + 1);
    const bool same = std::memcmp(y.data(), reversed.data(), n * sizeof(T)) == 0;
    if (same) {
      ++passed;
    } else {
      ++failed;
      PrintFailure("%s %s: unit order changed the bits", plan_names[p], label);
    }
  }
  // The GPU's direct kernel, every thread of a grid of 1, 7 and 256 threads (ragged last rounds
  // included), outputs poisoned so an element no thread wrote cannot pass.
  const std::pair<int64_t, double> grids[] = {{1, NAN}, {7, 7777.0}, {256, NAN}};
  for (const auto& [threads, poison] : grids) {
    std::vector<T> direct(n, static_cast<T>(poison));
    for (int64_t first = 0; first < threads; ++first) {
      cma::DirectMeansOfThread(CallOf<T>(g, window, edge, x.data(), direct.data()), x.data(),
                               direct.data(), first, threads);
    }
    Expect(std::string("direct/") + std::to_string(threads) + " " + label, direct, want, magnitude,
           tolerance, floor);
  }
  if (g.inner < cma::kTileMaxInner) {
    // Poisoned twice (NaN, then a finite value) so an element the scan never wrote cannot pass.
    for (double poison : {static_cast<double>(NAN), 7777.0}) {
      std::vector<T> scanned(n, static_cast<T>(poison));
      TileScanOnHost<T>(CallOf<T>(g, window, edge, x.data(), scanned.data()), x.data(),
                        scanned.data());
      Expect(std::string("tile-scan ") + label, scanned, want, magnitude, tolerance, floor);
    }
  }
}

// The GPU's kernels (gpu_launch.h's GpuKernel, which needs CUDA's headers).
enum class GpuKernel { kRunning, kDirect, kTileScan };
const char* const kGpuKernelNames[] = {"running", "direct", "tile-scan"};

// One GPU kernel on a call, emulated on the host: the running kernel's units, every thread of the
// direct kernel (a grid of 7), or the tile scan.
template <typename T>
void GpuKernelOnHost(GpuKernel kernel, const cma::Call& call) {
  const T* x = static_cast<const T*>(call.x);
  T* y = static_cast<T*>(call.y);
  if (kernel == GpuKernel::kRunning) {
    const cma::Plan plan = cma::MakeGpuPlan(call);
    RunningUnitsOnHost<T>(plan, x, y, 0, plan.num_units);
  } else if (kernel == GpuKernel::kDirect) {
    for (int64_t first = 0; first < 7; ++first) cma::DirectMeansOfThread(call, x, y, first, 7);
  } else {
    TileScanOnHost<T>(call, x, y);
  }
}

// The GPU launcher's stream (LaunchStream in gpu_kernels.cu) on the host, step by step with the
// same element maps: the rest of x, the stage, its outputs into x's head, the next state.
template <typename T>
void GpuStreamOnHost(GpuKernel kernel, const cma::Call& call) {
  GpuKernelOnHost<T>(kernel, cma::RestCall(call));
  const cma::StreamStage stage = cma::StageOf(call);
  if (stage.head_steps > 0) {
    std::vector<T> stage_x(stage.Elements()), stage_y(stage.Elements(), static_cast<T>(NAN));
    for (int64_t i = 0; i < stage.Elements(); ++i)
      stage_x[i] = cma::StageInputAt<T>(call, stage, i);
    GpuKernelOnHost<T>(kernel, cma::StageCall(call, stage_x.data(), stage_y.data()));
    for (int64_t i = 0; i < call.view.outer * stage.head_steps * call.view.inner; ++i) {
      static_cast<T*>(call.y)[cma::HeadOutputOf(call, stage, i)] =
          stage_y[cma::StageOutputOf(call, stage, i)];
    }
  }
  for (int64_t i = 0; i < call.view.outer * call.HistorySteps() * call.view.inner; ++i) {
    static_cast<T*>(call.next_history)[i] = cma::NextHistoryAt<T>(call, i);
  }
  *call.next_seen = cma::NextSeen(call);  // NextHistoryKernel's thread 0
}

// A series cut in two at `cut`: the second part as a stream that continues the first (its state
// the first part's last W - 1 inputs, zeros before the start), on the CPU and on every GPU kernel
// emulated; each against the reference of the whole series, and the next state exactly the last
// W - 1 inputs. Spikes and a NaN lie near the cut.
template <typename T>
void CheckStreams(std::mt19937_64& rng) {
  std::normal_distribution<double> normal(100.0, 10.0);
  // 20 rows: more than the CPU stages at once, so one row at a time.
  static_assert(cma::kStageSlices < 20, "a shape with more rows than the CPU stages at once");
  const cma::Geometry shapes[] = {{1, 300, 1}, {3, 90, 5}, {2, 70, 40}, {20, 60, 2}};
  for (const cma::Geometry whole : shapes) {
    for (const int64_t window : {1, 2, 5, 33, 100, 400}) {
      for (const cma::Edge edge : {cma::Edge::kZeros, cma::Edge::kPartial}) {
        for (const int64_t cut :
             {int64_t{0}, int64_t{1}, int64_t{3}, whole.steps / 2, whole.steps - 2}) {
          const int64_t n = whole.outer * whole.steps * whole.inner;
          std::vector<double> x64(n);
          for (auto& v : x64) v = static_cast<T>(normal(rng));
          const int64_t lane = rng() % whole.inner;
          x64[(cut > 0 ? cut - 1 : 0) * whole.inner + lane] = 1e30;
          x64[cma::Min64(cut + 1, whole.steps - 1) * whole.inner + lane] = NAN;
          std::vector<double> abs_x(n);
          for (int64_t i = 0; i < n; ++i) abs_x[i] = std::fabs(x64[i]);
          const auto want = Reference(x64, whole, window, edge);
          const auto magnitude = Reference(abs_x, whole, window, edge);
          // The second part, its state, and what the whole series gives for it.
          const cma::Geometry part{whole.outer, whole.steps - cut, whole.inner};
          const int64_t h = window - 1;
          std::vector<T> x(part.outer * part.steps * part.inner),
              history(whole.outer * h * whole.inner);
          std::vector<T> expected_next(history.size());
          std::vector<long double> part_want(x.size()), part_magnitude(x.size());
          for (int64_t o = 0; o < whole.outer; ++o) {
            for (int64_t i = 0; i < whole.inner; ++i) {
              for (int64_t t = 0; t < part.steps; ++t) {
                const int64_t from = (o * whole.steps + cut + t) * whole.inner + i;
                const int64_t to = (o * part.steps + t) * part.inner + i;
                x[to] = static_cast<T>(x64[from]);
                part_want[to] = want[from];
                part_magnitude[to] = magnitude[from];
              }
              for (int64_t j = 0; j < h; ++j) {
                const int64_t step = cut - h + j, next_step = whole.steps - h + j;
                const int64_t k = (o * h + j) * whole.inner + i;
                history[k] = step >= 0
                                 ? static_cast<T>(x64[(o * whole.steps + step) * whole.inner + i])
                                 : T(0);
                expected_next[k] =
                    next_step >= 0
                        ? static_cast<T>(x64[(o * whole.steps + next_step) * whole.inner + i])
                        : T(0);
              }
            }
          }
          const int64_t seen = cut;
          char label[160];
          std::snprintf(label, sizeof(label), "%s stream [%lld,%lld,%lld] cut %lld W=%lld %s",
                        sizeof(T) == 8 ? "f64" : "f32", (long long)whole.outer,
                        (long long)whole.steps, (long long)whole.inner, (long long)cut,
                        (long long)window, cma::NameOf(edge));
          const double tolerance = sizeof(T) == 8 ? 1e-14 : 1.2e-7;
          int64_t next_seen = -1;
          const auto check = [&](const std::string& path, const std::vector<T>& y,
                                 const std::vector<T>& next) {
            Expect(path + " " + label, y, part_want, part_magnitude, tolerance);
            if (next_seen == whole.steps) {
              ++passed;
            } else {
              ++failed;
              PrintFailure("%s %s: next seen %lld", path.c_str(), label, (long long)next_seen);
            }
            next_seen = -1;
            if (next.empty() ||
                std::memcmp(next.data(), expected_next.data(), next.size() * sizeof(T)) == 0) {
              ++passed;
            } else {
              ++failed;
              PrintFailure("%s %s: the next state is not the last W - 1 inputs", path.c_str(),
                           label);
            }
          };
          const auto stream_call = [&](std::vector<T>* y, std::vector<T>* next) {
            cma::Call call = CallOf<T>(part, window, edge, x.data(), y->data());
            call.stream = true;
            call.history = history.data();
            call.seen = &seen;
            call.next_history = next->data();
            call.next_seen = &next_seen;
            return call;
          };
          std::vector<T> y(x.size(), static_cast<T>(NAN)),
              next(history.size(), static_cast<T>(NAN));
          const cma::Call call = stream_call(&y, &next);
          std::vector<char> scratch(cma::CpuScratchBytes(call));
          cma::ComputeOnCpu(call, scratch.data(), 1, [](int64_t, const auto&) {});
          check("cpu", y, next);
          for (const GpuKernel kernel :
               {GpuKernel::kRunning, GpuKernel::kDirect, GpuKernel::kTileScan}) {
            if (kernel == GpuKernel::kTileScan && whole.inner >= cma::kTileMaxInner) continue;
            std::vector<T> gpu_y(x.size(), static_cast<T>(7777.0)), gpu_next(history.size(), T(0));
            GpuStreamOnHost<T>(kernel, stream_call(&gpu_y, &gpu_next));
            check(std::string("gpu-") + kGpuKernelNames[static_cast<int>(kernel)], gpu_y, gpu_next);
          }
        }
      }
    }
  }
}

// Packed sequences: random ids (runs of random lengths, 1-step ones included, ids that return to
// an earlier value), int32 and int64, a NaN inside one sequence: the CPU (each sequence a call of
// its own) and the GPU's direct kernel (the one kernel packed sequences take, emulated thread by
// thread) against a long double reference that cuts each window at its sequence's start. Four
// and eight lanes run the sums held in vector registers, with sequences of several blocks.
template <typename T, typename Id>
void CheckSegments(std::mt19937_64& rng) {
  std::normal_distribution<double> normal(100.0, 10.0);
  struct PackedRows {
    cma::Geometry g;
    uint64_t run;  // a new id after a step with probability 1 / run
  };
  for (const auto& [g, run] :
       {PackedRows{{1, 400, 1}, 9}, PackedRows{{3, 120, 5}, 9}, PackedRows{{2, 90, 40}, 9},
        PackedRows{{4, 1, 2}, 9}, PackedRows{{3, 30000, 1}, 9}, PackedRows{{2, 300, 4}, 9},
        PackedRows{{2, 3000, 8}, 700}}) {
    for (const int64_t window : {1, 2, 7, 64, 1000}) {
      if (g.outer * g.steps * g.inner * window > 50'000'000) continue;  // the reference's cost
      for (const cma::Edge edge : {cma::Edge::kZeros, cma::Edge::kPartial}) {
        const int64_t n = g.outer * g.steps * g.inner;
        std::vector<T> x(n);
        for (auto& v : x) v = static_cast<T>(normal(rng));
        x[rng() % n] = static_cast<T>(NAN);
        std::vector<Id> ids(g.outer * g.steps);
        for (int64_t row = 0; row < g.outer; ++row) {
          Id id = 0;
          for (int64_t t = 0; t < g.steps; ++t) {
            if (rng() % run == 0) id = static_cast<Id>(rng() % 3);  // may repeat: no new sequence
            ids[row * g.steps + t] = id;
          }
        }
        std::vector<long double> want(n), magnitude(n);
        for (int64_t row = 0; row < g.outer; ++row) {
          int64_t start = 0;
          for (int64_t t = 0; t < g.steps; ++t) {
            if (t > 0 && ids[row * g.steps + t] != ids[row * g.steps + t - 1]) start = t;
            const int64_t first = std::max(start, t - window + 1);
            const int64_t divisor = edge == cma::Edge::kPartial ? t - first + 1 : window;
            for (int64_t i = 0; i < g.inner; ++i) {
              long double sum = 0, abs_sum = 0;
              for (int64_t j = first; j <= t; ++j) {
                sum += x[(row * g.steps + j) * g.inner + i];
                abs_sum +=
                    std::fabs(static_cast<long double>(x[(row * g.steps + j) * g.inner + i]));
              }
              want[(row * g.steps + t) * g.inner + i] = sum / divisor;
              magnitude[(row * g.steps + t) * g.inner + i] = abs_sum / divisor;
            }
          }
        }
        char label[160];
        std::snprintf(label, sizeof(label), "%s ids%zu [%lld,%lld,%lld] W=%lld %s",
                      sizeof(T) == 8 ? "f64" : "f32", sizeof(Id) * 8, (long long)g.outer,
                      (long long)g.steps, (long long)g.inner, (long long)window, cma::NameOf(edge));
        const double tolerance = sizeof(T) == 8 ? 1e-14 : 1.2e-7;
        const auto call_of = [&](T* y) {
          cma::Call call = CallOf<T>(g, window, edge, x.data(), y);
          call.ids_kind = sizeof(Id) == 8 ? cma::Call::Ids::kInt64 : cma::Call::Ids::kInt32;
          call.segment_ids = ids.data();
          return call;
        };
        std::vector<T> cpu(n, static_cast<T>(7777.0));
        cma::ComputeOnCpu(call_of(cpu.data()), nullptr, 1, [](int64_t, const auto&) {});
        Expect(std::string("cpu ") + label, cpu, want, magnitude, tolerance);
        // Several threads (the positions cut into ranges, sequences across their boundaries),
        // shards run first to last and last to first: the same bits.
        for (const bool forward : {true, false}) {
          std::vector<T> sharded(n, static_cast<T>(7777.0));
          int64_t shards_run = 0;
          const auto run_all = [&](int64_t shards, const auto& run_shard) {
            for (int64_t k = 0; k < shards; ++k) run_shard(forward ? k : shards - 1 - k);
            shards_run = shards;
          };
          cma::ComputeOnCpu(call_of(sharded.data()), nullptr, 5, run_all);
          if (std::memcmp(sharded.data(), cpu.data(), n * sizeof(T)) == 0 &&
              (n < 2 * cma::kMinShardElements || shards_run > 1)) {
            ++passed;
          } else {
            ++failed;
            PrintFailure("%s: %lld shards changed the bits", label, (long long)shards_run);
          }
        }
        std::vector<T> direct(n, static_cast<T>(NAN));
        for (int64_t first = 0; first < 7; ++first) {
          cma::DirectMeansOfThread(call_of(direct.data()), x.data(), direct.data(), first, 7);
        }
        Expect(std::string("gpu-direct ") + label, direct, want, magnitude, tolerance);
      }
    }
  }
}

// float64's careful path (what a block that meets a NaN runs) adds in the same order as its fast
// path, and its scaling by 2^-64 is exact for inputs above 2^-958: finite windows must get the
// same bits either way, also where tiny inputs cancel to a mean far below 2^-958.
void CheckCarefulPathKeepsFloat64Bits(std::mt19937_64& rng) {
  const int64_t steps = 3000;
  std::uniform_real_distribution<double> uniform(1.0, 2.0);
  for (int64_t window : {1, 3, 50, 5000}) {
    std::vector<double> x(steps);
    for (auto& v : x) v = std::ldexp(rng() % 2 ? uniform(rng) : -uniform(rng), -957);
    std::vector<double> poisoned = x;
    poisoned[steps - 1] = NAN;  // only the last output's window holds it
    for (const bool cpu : {true, false}) {
      const cma::Geometry g{1, steps, 1};
      const cma::Plan plan = cpu ? cma::MakeCpuPlan(CallOf<double>(g, window, cma::Edge::kZeros))
                                 : cma::MakeGpuPlan(CallOf<double>(g, window, cma::Edge::kZeros));
      std::vector<double> fast(steps), careful(steps);
      RunPlan<double>(cpu, plan, x.data(), fast.data());
      RunPlan<double>(cpu, plan, poisoned.data(), careful.data());
      if (std::memcmp(fast.data(), careful.data(), (steps - 1) * sizeof(double)) == 0) {
        ++passed;
      } else {
        ++failed;
        PrintFailure("careful path changed float64 bits, W=%lld", (long long)window);
      }
    }
  }
}

// One lane of 16- or 32-bit inputs: the spans after a row's first, four by four, run side by side
// in the lanes of one vector (SpanGroupsFor). Each such span gets the bits the per-lane loop of a
// wider unit gives it alone (the split windows on a strided copy, which takes that loop), whatever
// the order units run in, and meets the reference; spans of other windows (direct sums, blocks of
// 65-256 steps, beyond kSpanLanesWindowMax) do not run side by side.
void CheckSpansSideBySide(std::mt19937_64& rng) {
  const int64_t span = cma::kCpuSpanElements;
  std::normal_distribution<double> normal(100.0, 10.0);
  for (const int64_t steps : {6 * span, 6 * span + 17, 11 * span - 5}) {
    for (const int64_t window : {16, 17, 64, 65, 1024, 4095, 4096, 8192, 8193}) {
      for (const cma::Edge edge : {cma::Edge::kZeros, cma::Edge::kPartial}) {
        const cma::Geometry g{1, steps, 1};
        std::vector<double> x64(steps);
        for (auto& v : x64) v = static_cast<float>(normal(rng));
        const std::vector<double> plain = x64;
        // Spikes, sentinels and non-finite values near the spans' starts and ends, and large
        // values taken out again within a window: what a sum loses of the small ones between
        // depends on the order of its additions, so another order gives other bits.
        const double specials[] = {1e30, -3.4e38, 1e9, -999999.0, NAN, INFINITY, -INFINITY};
        for (int k = 0; k < 21; ++k) {
          const int64_t near = (1 + rng() % (steps / span)) * span;
          const int64_t at = near - window + static_cast<int64_t>(rng() % (2 * window + 1));
          if (at >= 0 && at < steps) x64[at] = specials[k % 7];
        }
        for (int k = 0; k < 3000; ++k) {
          const int64_t at = rng() % (steps - window);
          x64[at] = k % 2 ? 1e20 : -1e20;
          x64[at + 1 + rng() % window] = -x64[at];
        }
        for (const bool spiked : {false, true}) {
          const std::vector<double>& source = spiked ? x64 : plain;
          const std::vector<float> x(source.begin(), source.end());
          std::vector<float> y(steps, NAN), reversed(steps, NAN);
          const cma::Plan plan = cma::MakeCpuPlan(CallOf<float>(g, window, edge));
          const bool side_by_side =
              (window > cma::kShortWindowMax && window <= cma::kSpanLanesShortMax) ||
              (window >= cma::kSpanLanesLongMin && window <= cma::kSpanLanesWindowMax);
          const int64_t groups = side_by_side ? (plan.spans_per_row - 2) / cma::kSpanLanes : 0;
          if (plan.span_groups != groups || groups == 0) {
            if (plan.span_groups != groups) {
              ++failed;
              PrintFailure("steps %lld W=%lld: %lld units of spans side by side, want %lld",
                           (long long)steps, (long long)window, (long long)plan.span_groups,
                           (long long)groups);
            } else {
              ++passed;
            }
            continue;
          }
          cma::ComputeUnits<float>(plan, x.data(), y.data(), 0, plan.num_units);
          for (int64_t u = plan.num_units - 1; u >= 0; --u) {
            cma::ComputeUnits<float>(plan, x.data(), reversed.data(), u, u + 1);
          }
          if (std::memcmp(y.data(), reversed.data(), steps * sizeof(float)) != 0) {
            ++failed;
            PrintFailure("steps %lld W=%lld: units in reverse changed bits", (long long)steps,
                         (long long)window);
          }
          // Each span of a unit of spans side by side, alone through the per-lane loop.
          std::vector<float> strided(2 * steps), alone(2 * steps);
          for (int64_t t = 0; t < steps; ++t) strided[2 * t] = x[t];
          const int64_t summed = std::min(window, steps);
          const cma::SplitLayout layout = cma::SplitLayoutFor(summed, 1);
          std::vector<cma::PlainSum> scratch(layout.ScratchSums(1));
          const auto divisors = cma::DivisorsOf<double>(CallOf<float>(g, window, edge));
          int64_t spans_checked = 0, differ = 0;
          for (int64_t u = 0; u < plan.num_units; ++u) {
            const cma::UnitRange r = cma::UnitAt(plan, u);
            if (r.spans == 1) continue;
            for (int64_t l = 0; l < r.spans; ++l, ++spans_checked) {
              const int64_t t0 = r.t0 + l * plan.span_steps, t1 = r.t1 + l * plan.span_steps;
              cma::SplitWindowMeans(strided.data(), alone.data(), 2, 1, t0, t1, summed, divisors,
                                    layout, scratch.data());
              for (int64_t t = t0; t < t1; ++t) {
                differ += std::memcmp(&y[t], &alone[2 * t], sizeof(float)) != 0;
              }
            }
          }
          if (differ != 0 || spans_checked != cma::kSpanLanes * groups) {
            ++failed;
            PrintFailure(
                "steps %lld W=%lld: %lld outputs of %lld spans side by side differ from "
                "the per-lane loop",
                (long long)steps, (long long)window, (long long)differ, (long long)spans_checked);
          } else {
            ++passed;
          }
          if (!spiked) {  // the reference by long double prefix sums (plain data only)
            std::vector<long double> prefix(steps + 1, 0.0L), want(steps), magnitude(steps);
            for (int64_t t = 0; t < steps; ++t) prefix[t + 1] = prefix[t] + x[t];
            for (int64_t t = 0; t < steps; ++t) {
              const int64_t first = std::max<int64_t>(0, t - window + 1);
              const long double divisor =
                  static_cast<long double>(edge == cma::Edge::kPartial ? t - first + 1 : window);
              want[t] = (prefix[t + 1] - prefix[first]) / divisor;
              magnitude[t] = want[t];  // positive inputs
            }
            Expect("spans side by side", y, want, magnitude, 1.2e-7);
          }
        }
      }
    }
  }
}

// A NaN/Inf that left the window just before a unit starts must not reach the unit's outputs
// (a unit's fast path must read nothing before its first window).
void CheckNonFiniteJustBeforeUnits(std::mt19937_64& rng) {
  std::normal_distribution<double> normal(100.0, 10.0);
  for (const int64_t inner : {1, 2, 3, 8}) {
    for (const int64_t window : {1, 2, 5, 7, 100}) {
      for (const int64_t back : {1, 2, 3, 4}) {
        for (const bool cpu : {true, false}) {
          const cma::Geometry g{1, 3000, inner};
          const cma::Plan plan =
              cpu ? cma::MakeCpuPlan(CallOf<double>(g, window, cma::Edge::kZeros))
                  : cma::MakeGpuPlan(CallOf<double>(g, window, cma::Edge::kZeros));
          std::vector<double> x(g.steps * inner);
          for (auto& v : x) v = normal(rng);
          // The first unit of the row that starts at least W + back steps in (spans can be
          // shorter than W on the GPU).
          const int64_t start = cma::CeilDiv(window + back, plan.span_steps) * plan.span_steps;
          if (start >= g.steps) continue;
          x[(start - window - back) * inner + inner - 1] = back % 2 ? NAN : INFINITY;
          std::vector<double> abs_x(x.size());
          for (size_t i = 0; i < x.size(); ++i) abs_x[i] = std::fabs(x[i]);
          std::vector<double> y(x.size(), 7777.0);
          RunPlan<double>(cpu, plan, x.data(), y.data());
          std::vector<float> x32(x.begin(), x.end()), y32(x.size(), 7777.0f);
          RunPlan<float>(cpu, plan, x32.data(), y32.data());
          const auto want = Reference(x, g, window, cma::Edge::kZeros);
          const auto magnitude = Reference(abs_x, g, window, cma::Edge::kZeros);
          const std::string label = std::string(cpu ? "cpu" : "gpu") +
                                    "-plan inner=" + std::to_string(inner) +
                                    " W=" + std::to_string(window) + " non-finite " +
                                    std::to_string(back) + " before a unit";
          Expect("f64 " + label, y, want, magnitude, 1e-14);
          Expect("f32 " + label, y32, want, magnitude, 1.2e-7);
        }
      }
    }
  }
}

// The NumPy binding's bfloat16 rounds float32 to nearest, ties to even, as Eigen's does: checked
// against the two bfloat16 neighbours of each float, compared in double.
// A float32 of the given bits, and the bits of a float32.
float FloatOfBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
uint32_t BitsOfFloat(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

void CheckHostBfloat16(std::mt19937_64& rng) {
  std::vector<uint32_t> samples = {0x00000000, 0x80000000, 0x3F808000, 0x3F818000, 0x7F7FFFFF,
                                   0x7F7F8000, 0x00008000, 0x00018000, 0x7F800000, 0xFF800000};
  for (int k = 0; k < 2'000'000; ++k) samples.push_back(static_cast<uint32_t>(rng()));
  int wrong = 0;
  for (const uint32_t bits : samples) {
    const float f = FloatOfBits(bits);
    const cma::HostBfloat16 b(f);
    uint16_t want;
    if (std::isnan(f)) {
      want = std::signbit(f) ? 0xFFC0 : 0x7FC0;
    } else if ((bits & 0xFFFF) == 0) {
      want = static_cast<uint16_t>(bits >> 16);  // exact, infinities included
    } else {
      const uint16_t low = static_cast<uint16_t>(bits >> 16);  // toward zero
      const uint16_t high = static_cast<uint16_t>(low + 1);    // away from zero
      // Past the largest finite bfloat16 comes the Inf, which rounding treats as 2^128.
      const double high_value =
          (high & 0x7FFF) == 0x7F80 ? std::copysign(0x1p128, f) : FloatOfBits(uint32_t{high} << 16);
      const double below = std::fabs(static_cast<double>(f) - FloatOfBits(uint32_t{low} << 16));
      const double above = std::fabs(high_value - static_cast<double>(f));
      want = below < above || (below == above && (low & 1) == 0) ? low : high;
    }
    if (b.bits != want ||
        (!std::isnan(f) && static_cast<float>(b) != FloatOfBits(uint32_t{want} << 16))) {
      if (++wrong <= 3) PrintFailure("bfloat16 of %08x: %04x, want %04x", bits, b.bits, want);
    }
  }
  wrong == 0 ? ++passed : ++failed;
}

// HostHalf (the NumPy binding's float16) converts as the compiler's _Float16: every half to
// float, and floats around every half (ties, neighbours), subnormals, overflow, NaN and random.
void CheckHostHalf(std::mt19937_64& rng) {
  int wrong = 0;
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    cma::HostHalf half;
    half.bits = static_cast<uint16_t>(h);
    _Float16 reference;
    std::memcpy(&reference, &h, sizeof(reference));
    if (BitsOfFloat(static_cast<float>(half)) != BitsOfFloat(static_cast<float>(reference))) {
      if (++wrong <= 3) PrintFailure("float of half %04x", h);
    }
  }
  std::vector<uint32_t> samples = {0x477FE000, 0x477FF000, 0x477FF001, 0x47800000,
                                   0x7F7FFFFF, 0x7F800000, 0x7FC00001, 0x7F802001,
                                   0x33000000, 0x33000001, 0x00000001, 0x387FE000};
  for (uint32_t h = 0; h <= 0x7C00; ++h) {
    cma::HostHalf half;
    half.bits = static_cast<uint16_t>(h);
    const uint32_t center = BitsOfFloat(static_cast<float>(half));
    for (const uint32_t offset : {0u, 1u, 0xFFFu, 0x1000u, 0x1001u}) {
      samples.push_back(center + offset);
      samples.push_back((center - offset) | 0x80000000u);
    }
  }
  for (int k = 0; k < 2'000'000; ++k) samples.push_back(static_cast<uint32_t>(rng()));
  for (const uint32_t bits : samples) {
    const float f = FloatOfBits(bits);
    const _Float16 reference = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &reference, sizeof(want));
    if (cma::HostHalf(f).bits != want) {
      if (++wrong <= 3)
        PrintFailure("half of %08x: %04x, want %04x", bits, cma::HostHalf(f).bits, want);
    }
  }
  wrong == 0 ? ++passed : ++failed;
}

// A constant run reads back exactly its value on every path (CPU and GPU plans, the direct
// kernel's threads, the tile scan), for every window whose inputs are all the constant.
template <typename T>
void CheckConstantRunsExact() {
  const cma::Geometry shapes[] = {{1, 3000, 1}, {2, 700, 5}, {1, 300, 40}};
  for (const double constant : {0.7, 0.1, 1.0 / 3.0, 123456.789, -2.5e-3}) {
    const T value = static_cast<T>(constant);
    for (const cma::Geometry& g : shapes) {
      const int64_t n = g.outer * g.steps * g.inner;
      const std::vector<T> x(n, value);
      for (int64_t window : {1, 3, 10, 49, 1000}) {
        for (cma::Edge edge : {cma::Edge::kZeros, cma::Edge::kPartial}) {
          std::vector<std::pair<std::string, std::vector<T>>> outputs;
          for (const bool cpu : {true, false}) {
            const cma::Plan plan = cpu ? cma::MakeCpuPlan(CallOf<T>(g, window, edge))
                                       : cma::MakeGpuPlan(CallOf<T>(g, window, edge));
            std::vector<T> y(n, static_cast<T>(NAN));
            RunPlan<T>(cpu, plan, x.data(), y.data());
            outputs.emplace_back(cpu ? "cpu" : "gpu-running", y);
          }
          std::vector<T> direct(n, static_cast<T>(NAN));
          for (int64_t first = 0; first < 256; ++first) {
            cma::DirectMeansOfThread(CallOf<T>(g, window, edge, x.data(), direct.data()), x.data(),
                                     direct.data(), first, 256);
          }
          outputs.emplace_back("direct", direct);
          if (g.inner < cma::kTileMaxInner) {
            std::vector<T> scanned(n, static_cast<T>(NAN));
            TileScanOnHost<T>(CallOf<T>(g, window, edge, x.data(), scanned.data()), x.data(),
                              scanned.data());
            outputs.emplace_back("tile-scan", scanned);
          }
          for (const auto& [path, y] : outputs) {
            int64_t wrong = 0;
            for (int64_t i = 0; i < n; ++i) {
              const int64_t t = (i / g.inner) % g.steps;
              if ((edge == cma::Edge::kPartial || t >= window - 1) && !(y[i] == value)) ++wrong;
            }
            if (wrong == 0) {
              ++passed;
            } else {
              ++failed;
              PrintFailure("%s: %lld outputs of a constant run of %.17g, W=%lld %s, are not it",
                           path.c_str(), (long long)wrong, constant, (long long)window,
                           cma::NameOf(edge));
            }
          }
        }
      }
    }
  }
}

// Launch sizes are never 0, whatever the multiprocessor count (a failed or odd query must not
// launch an empty grid), and grow with it.
void CheckGpuLaunchSizes() {
  bool ok = true;
  for (int sm_count : {-1, 0, 1, 132}) {
    for (int64_t work : {int64_t{0}, int64_t{1}, int64_t{255}, int64_t{1} << 40}) {
      ok = ok && cma::GridSize(work, sm_count) >= 1 && cma::TileScanBlocks(work, sm_count) >= 1;
    }
  }
  ok = ok && cma::GridSize(int64_t{1} << 40, 132) > cma::GridSize(int64_t{1} << 40, 1) &&
       cma::TileScanBlocks(int64_t{1} << 40, 132) == 132 * 32 && cma::TileScanBlocks(5, 132) == 5 &&
       cma::GridSize(256 * 3, 132) == 3;
  if (!ok) {
    PrintFailure("gpu launch sizes");
    ++failed;
    return;
  }
  ++passed;
}

// The GPU plan's spans: the CPU's rule (at least 4W) where that leaves kGpuMinUnits units, else
// shortened to leave them, never below kGpuMinSpanSteps, and the units cover every step.
void CheckGpuPlanUnits() {
  struct Expected {
    cma::Geometry g;
    int64_t window, span;
  };
  const Expected cases[] = {
      {{16, 4096, 128}, 1024, 256},    // 2048 lanes: 16 spans of 256 steps
      {{16, 4096, 128}, 3, 64},        // the CPU rule's spans already leave enough units
      {{256, 4096, 256}, 1024, 4096},  // 65536 lanes: spans of 4W kept
      {{1, 10000, 1}, 1000, 64},       // one lane: not below kGpuMinSpanSteps
      {{2, 50, 3}, 1 << 20, 50},       // shorter than a span
  };
  for (const Expected& e : cases) {
    const cma::Plan plan = cma::MakeGpuPlan(CallOf<float>(e.g, e.window, cma::Edge::kZeros));
    const bool enough = plan.num_units >= cma::kGpuMinUnits ||
                        plan.span_steps == cma::Min64(e.g.steps, cma::kGpuMinSpanSteps);
    const bool covers = plan.spans_per_row * plan.span_steps >= e.g.steps &&
                        (plan.spans_per_row - 1) * plan.span_steps < e.g.steps &&
                        plan.num_units == e.g.outer * e.g.inner * plan.spans_per_row;
    if (plan.span_steps == e.span && enough && covers) {
      ++passed;
    } else {
      ++failed;
      PrintFailure("gpu plan [%lld, %lld, %lld] W=%lld: span %lld (want %lld), %lld units",
                   (long long)e.g.outer, (long long)e.g.steps, (long long)e.g.inner,
                   (long long)e.window, (long long)plan.span_steps, (long long)e.span,
                   (long long)plan.num_units);
    }
  }
}

// The driver check accepts a driver of the runtime's major version or newer and names both
// versions and the needed driver otherwise.
void CheckDriverProblem() {
  const bool accepts = cma::DriverProblem(13000, 13000).empty() &&
                       cma::DriverProblem(13020, 13000).empty() &&
                       cma::DriverProblem(12020, 12050).empty() &&  // minor version compatibility
                       cma::DriverProblem(13000, 12050).empty();
  const std::string old = cma::DriverProblem(12040, 13000);
  const std::string none = cma::DriverProblem(0, 12050);
  const bool explains = old.find("CUDA 13.0") != std::string::npos &&
                        old.find(">= 580") != std::string::npos &&
                        old.find("supports CUDA 12.4") != std::string::npos &&
                        none.find(">= 525") != std::string::npos &&
                        none.find("no NVIDIA driver") != std::string::npos;
  if (!accepts || !explains) {
    PrintFailure("driver check: '%s' / '%s'", old.c_str(), none.c_str());
    ++failed;
    return;
  }
  ++passed;
}

// Single and many rows, narrow and wide lanes (several 256-lane tiles), sequences crossing CPU
// blocks (32768 steps) and GPU tiles (2048 / 1024 steps for one lane, fewer for more lanes, e.g.
// 288 / 144 for 7), windows from 1 to the int64 limit: shorter than a tile, a tile and more,
// several tiles, and longer than the sequence. Every shape and window for one dtype, edge and
// extra.
template <typename T>
void CheckReferenceMatrix(cma::Edge edge, Extra extra, std::mt19937_64& rng) {
  const cma::Geometry shapes[] = {{1, 5000, 1}, {3, 700, 5},   {2, 300, 40}, {1, 1, 1},
                                  {2, 2, 3},    {1, 70000, 1}, {1, 3, 5000}, {4, 130, 2},
                                  {2, 1500, 7}, {1, 9000, 31}};
  const int64_t windows[] = {1,
                             2,
                             3,
                             7,
                             33,
                             64,
                             1000,
                             1024,
                             2048,
                             3000,
                             4100,
                             int64_t{1} << 40,
                             std::numeric_limits<int64_t>::max()};
  for (const auto& g : shapes) {
    for (int64_t w : windows) {
      // The O(T*W) reference stays fast.
      if (g.outer * g.steps * g.inner * std::min(w, g.steps) > 20'000'000) continue;
      CheckCase<T>(g, w, edge, extra, rng);
    }
  }
}

struct TestCase {
  std::string name;
  std::function<void(std::mt19937_64& rng)> run;  // rng: seeded from the name
};

// The reference matrix split by dtype, edge and extra (float32 takes the extras its range
// holds); then the single checks.
std::vector<TestCase> AllCases() {
  std::vector<TestCase> cases;
  const char* extra_names[] = {"plain", "specials", "huge", "tiny_specials", "tiny_huge", "spikes"};
  for (const bool f64 : {false, true}) {
    for (const auto& edge_and_name :
         {std::pair{cma::Edge::kZeros, "zeros"}, std::pair{cma::Edge::kPartial, "partial"}}) {
      const cma::Edge edge = edge_and_name.first;  // a plain variable: C++17 lambdas capture it
      const char* edge_name = edge_and_name.second;
      for (const Extra extra : {Extra::kNone, Extra::kSpecials, Extra::kHuge, Extra::kTinySpecials,
                                Extra::kTinyHuge, Extra::kSpikes}) {
        if (!f64 &&
            (extra == Extra::kHuge || extra == Extra::kTinySpecials || extra == Extra::kTinyHuge)) {
          continue;
        }
        const std::string name = std::string("reference/") + (f64 ? "float64/" : "float32/") +
                                 edge_name + "/" + extra_names[static_cast<int>(extra)];
        cases.push_back({name, [f64, edge, extra](std::mt19937_64& rng) {
                           f64 ? CheckReferenceMatrix<double>(edge, extra, rng)
                               : CheckReferenceMatrix<float>(edge, extra, rng);
                         }});
      }
    }
  }
  cases.push_back({"careful_path_keeps_float64_bits", CheckCarefulPathKeepsFloat64Bits});
  cases.push_back({"streams/float32", CheckStreams<float>});
  cases.push_back({"segments/float32/int32", CheckSegments<float, int32_t>});
  cases.push_back({"segments/float64/int64", CheckSegments<double, int64_t>});
  cases.push_back({"streams/float64", CheckStreams<double>});
  cases.push_back({"host_bfloat16", CheckHostBfloat16});
  cases.push_back({"host_half", CheckHostHalf});
  cases.push_back({"nonfinite_just_before_units", CheckNonFiniteJustBeforeUnits});
  cases.push_back({"spans_side_by_side", CheckSpansSideBySide});
  cases.push_back(
      {"constant_runs_exact/float32", [](std::mt19937_64&) { CheckConstantRunsExact<float>(); }});
  cases.push_back(
      {"constant_runs_exact/float64", [](std::mt19937_64&) { CheckConstantRunsExact<double>(); }});
  cases.push_back({"gpu_launch_sizes", [](std::mt19937_64&) { CheckGpuLaunchSizes(); }});
  cases.push_back({"gpu_plan_units", [](std::mt19937_64&) { CheckGpuPlanUnits(); }});
  cases.push_back({"driver_problem", [](std::mt19937_64&) { CheckDriverProblem(); }});
  return cases;
}

// FNV-1a of a case's name: its seed, the same on every platform and in every selection of cases.
uint64_t SeedOf(const std::string& name) {
  uint64_t hash = 14695981039346656037ull;
  for (const unsigned char c : name) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

int Usage(const char* program) {
  std::fprintf(stderr, "usage: %s [--list] [--filter SUBSTRING]...\n", program);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<TestCase> cases = AllCases();
  bool list = false;
  std::vector<std::string> filters;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--list") {
      list = true;
    } else if (arg == "--filter" && i + 1 < argc) {
      filters.push_back(argv[++i]);
    } else if (arg.rfind("--filter=", 0) == 0) {
      filters.push_back(arg.substr(std::strlen("--filter=")));
    } else {
      std::fprintf(stderr, "unknown or incomplete argument '%s'\n", arg.c_str());
      return Usage(argv[0]);
    }
  }
  std::vector<const TestCase*> selected;
  for (const TestCase& c : cases) {
    const bool match =
        filters.empty() || std::any_of(filters.begin(), filters.end(), [&](const std::string& f) {
          return c.name.find(f) != std::string::npos;
        });
    if (match) selected.push_back(&c);
  }
  for (const std::string& f : filters) {
    const bool matches = std::any_of(cases.begin(), cases.end(), [&](const TestCase& c) {
      return c.name.find(f) != std::string::npos;
    });
    if (!matches) {
      std::fprintf(stderr, "--filter '%s' matches no test case (--list names them)\n", f.c_str());
      return 2;
    }
  }
  if (list) {
    for (const TestCase* c : selected) std::printf("%s\n", c->name.c_str());
    return 0;
  }
  for (const TestCase* c : selected) {
    current_case = c->name.c_str();
    std::mt19937_64 rng(SeedOf(c->name));
    try {
      c->run(rng);
    } catch (const std::exception& e) {
      PrintFailure("threw %s", e.what());
      ++failed;
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
