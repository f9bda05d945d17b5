// NumPy binding of the core: the same arithmetic as the TensorFlow op, for arrays outside a
// graph. Argument checks live in Python (python/causal_moving_avg/_checks.py, which reads the
// lists this module exports); this layer maps the array onto [outer, steps, inner], releases the
// GIL and shards the units over threads.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "cc/core/call.h"
#include "cc/core/cpu.h"
#include "cc/core/numerics.h"
#include "cc/core/plan.h"
#include "cc/core/types.h"

namespace py = pybind11;
namespace cma = causal_moving_avg;

namespace {

// The core on std::threads, one per core: units do not depend on the thread count, so the bits
// are the TF kernel's.
// The host types of the 16-bit dtypes are NumPy's layouts (_Float16 is IEEE binary16, as
// numpy.float16; bfloat16 arrays come from ml_dtypes, as TensorFlow's .numpy() gives them).
void Compute(const cma::Call& call) {
  py::gil_scoped_release release;
  cma::ComputeOnCpu<_Float16, cma::HostBfloat16>(call,
                                                 std::max(1u, std::thread::hardware_concurrency()),
                                                 [](int64_t shards, const auto& run_shard) {
                                                   std::vector<std::thread> workers;
                                                   for (int64_t shard = 1; shard < shards; ++shard)
                                                     workers.emplace_back(run_shard, shard);
                                                   run_shard(0);
                                                   for (auto& worker : workers) worker.join();
                                                 });
}

py::array CausalMovingAvg(const py::array& input, int64_t window, int64_t axis,
                          const std::string& edge_name) {
  cma::Edge edge;
  if (!cma::ParseName(edge_name.c_str(), &edge)) {
    throw py::value_error("causal_moving_avg: unknown edge '" + edge_name + "'");
  }
  const std::string dtype_name = py::str(input.dtype());
  cma::DType dtype;
  if (!cma::ParseName(dtype_name.c_str(), &dtype)) {
    throw py::type_error("causal_moving_avg: unsupported dtype " + dtype_name);
  }
  // A C-contiguous view of the same dtype, copied only when the input has other strides.
  const py::array x = py::array::ensure(input, py::array::c_style);
  if (!x) {
    throw py::type_error("causal_moving_avg: could not view the input as a C-contiguous array");
  }
  py::array y(x.dtype(), std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  const std::vector<int64_t> dims(x.shape(), x.shape() + x.ndim());
  const cma::Call call{cma::GeometryOf(dims.data(), x.ndim(), axis),
                       dtype,
                       window,
                       edge,
                       x.data(),
                       y.mutable_data()};
  if (const std::string problem = cma::CheckCall(call); !problem.empty()) {
    throw py::value_error("causal_moving_avg: " + problem);
  }
  if (call.Elements() > 0) Compute(call);
  return y;
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
  m.attr("EDGES") = py::tuple(
      py::cast(std::vector<std::string>(std::begin(cma::kEdgeNames), std::end(cma::kEdgeNames))));
  m.attr("DTYPES") = py::tuple(
      py::cast(std::vector<std::string>(std::begin(cma::kDTypeNames), std::end(cma::kDTypeNames))));
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
  plan["span_elements"] = cma::kCpuSpanElements;
  plan["max_unit_lanes"] = cma::kMaxUnitLanes;
  plan["block_steps"] = cma::kSplitBlock;
  plan["short_window_max"] = cma::kShortWindowMax;
  plan["reciprocal_steps"] = cma::kReciprocalSteps;
  m.attr("CPU_PLAN") = plan;
}
