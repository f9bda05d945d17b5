// NumPy binding of the core: the same arithmetic as the TensorFlow op, for arrays outside a
// graph. Argument checks live in Python (python/causal_moving_avg/_checks.py, which reads the
// lists this module exports); this layer maps the array onto [outer, steps, inner], releases the
// GIL and shards the units over threads.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "cc/core/cpu.h"
#include "cc/core/numerics.h"
#include "cc/core/plan.h"
#include "cc/core/types.h"

namespace py = pybind11;
namespace cma = causal_moving_avg;

namespace {

// The host type each dtype is held in: NumPy's layouts (_Float16 is IEEE binary16, as
// numpy.float16; bfloat16 arrays come from ml_dtypes, as TensorFlow's .numpy() gives them).
template <cma::DType kDType>
using HostTypeOf = cma::CppTypeOf<_Float16, cma::HostBfloat16, kDType>;

// Units are independent and their boundaries do not depend on the thread count, so any split
// gives bitwise the same result as the TF kernel.
template <typename T>
void ComputeParallel(const cma::Plan& plan, const T* x, T* y) {
  const int64_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const int64_t shards = cma::ShardCount(plan, hardware);
  if (shards <= 1) {
    cma::ComputeUnits<T>(plan, x, y, 0, plan.num_units);
    return;
  }
  std::vector<std::thread> workers;
  for (int64_t shard = 0; shard < shards; ++shard) {
    int64_t begin, end;
    cma::ShardUnits(plan, shard, shards, &begin, &end);
    workers.emplace_back(
        [&plan, x, y, begin, end] { cma::ComputeUnits<T>(plan, x, y, begin, end); });
  }
  for (auto& worker : workers) worker.join();
}

template <typename T>
void Run(const cma::Plan& plan, const py::array& x, py::array& y) {
  const T* in = static_cast<const T*>(x.data());
  T* out = static_cast<T*>(y.mutable_data());
  py::gil_scoped_release release;
  ComputeParallel<T>(plan, in, out);
}

py::array CausalMovingAvg(const py::array& input, int64_t window, int64_t axis,
                          const std::string& edge_name) {
  cma::Edge edge;
  if (!cma::ParseEdge(edge_name.c_str(), &edge)) {
    throw py::value_error("causal_moving_avg: unknown edge '" + edge_name + "'");
  }
  const std::string dtype_name = py::str(input.dtype());
  // A C-contiguous view of the same dtype, copied only when the input has other strides.
  const py::array x = py::array::ensure(input, py::array::c_style);
  if (!x) {
    throw py::type_error("causal_moving_avg: could not view the input as a C-contiguous array");
  }
  py::array y(x.dtype(), std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  const std::vector<int64_t> dims(x.shape(), x.shape() + x.ndim());
  const cma::Geometry geometry = cma::GeometryOf(dims.data(), x.ndim(), axis);
#define CMA_RUN(enumerator, name)                                                              \
  if (dtype_name == name) {                                                                    \
    if (x.size() > 0) {                                                                        \
      Run<HostTypeOf<cma::DType::enumerator>>(cma::MakeCpuPlan(geometry, window, edge), x, y); \
    }                                                                                          \
    return y;                                                                                  \
  }
  CMA_FOR_EACH_DTYPE(CMA_RUN)
#undef CMA_RUN
  throw py::type_error("causal_moving_avg: unsupported dtype " + dtype_name);
}

}  // namespace

PYBIND11_MODULE(_numpy_core, m) {
  m.doc() =
      "CausalMovingAvg's C++ core for NumPy arrays (use causal_moving_avg.numpy_causal_moving_avg)";
  m.def("causal_moving_avg", &CausalMovingAvg, py::arg("x"), py::arg("window"), py::arg("axis"),
        py::arg("edge"),
        "Checked arguments only: x an ndarray of rank >= 1, window >= 1, 0 <= axis < x.ndim, "
        "edge one of EDGES.");
  // The lists every binding expands (cc/core/types.h), for the Python checks.
  py::list edges, dtypes;
#define CMA_APPEND(enumerator, name) edges.append(name);
  CMA_FOR_EACH_EDGE(CMA_APPEND)
#undef CMA_APPEND
#define CMA_APPEND(enumerator, name) dtypes.append(name);
  CMA_FOR_EACH_DTYPE(CMA_APPEND)
#undef CMA_APPEND
  m.attr("EDGES") = py::tuple(edges);
  m.attr("DTYPES") = py::tuple(dtypes);
  // The versions of the core this binary holds and this CPU can run, and the one in use
  // (CMA_CPU_VERSION in the environment forces one).
  py::list versions;
  for (const cma::CpuVersion version : cma::RunnableCpuVersions()) {
    versions.append(cma::CpuVersionName(version));
  }
  m.attr("CPU_VERSIONS") = py::tuple(versions);
  m.def("cpu_version", [] { return cma::CpuVersionName(cma::ActiveCpuVersion()); });
  // How the CPU cuts the work, for tests that aim at its boundaries.
  py::dict plan;
  plan["segment_elements"] = cma::kCpuSegmentElements;
  plan["max_unit_lanes"] = cma::kMaxUnitLanes;
  plan["chunk_steps"] = cma::kCpuChunkSteps;
  plan["short_window_max"] = cma::kShortWindowMax;
  plan["reciprocal_steps"] = cma::kReciprocalSteps;
  m.attr("CPU_PLAN") = plan;
}
