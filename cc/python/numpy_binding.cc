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
#include <memory>
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
// are the TF kernel's. NumPy's float16 and ml_dtypes' bfloat16 have the core's 16-bit layouts.
void Compute(const cma::Call& call) {
  // A stream's stage, allocated before the GIL is released so that a failure is a MemoryError;
  // left unwritten (the core fills it after its huge-page hint).
  const int64_t scratch_bytes = cma::CpuScratchBytes(call);
  std::unique_ptr<char[]> scratch(scratch_bytes > 0 ? new char[scratch_bytes] : nullptr);
  py::gil_scoped_release release;
  cma::ComputeOnCpu(call, scratch.get(), std::max(1u, std::thread::hardware_concurrency()),
                    [](int64_t shards, const auto& run_shard) {
                      std::vector<std::thread> workers;
                      for (int64_t shard = 1; shard < shards; ++shard)
                        workers.emplace_back(run_shard, shard);
                      run_shard(0);
                      for (auto& worker : workers) worker.join();
                    });
}

// x's C-contiguous view of the same dtype, copied only when the input has other strides.
py::array ContiguousOf(const py::array& input, const char* what) {
  const py::array contiguous = py::array::ensure(input, py::array::c_style);
  if (!contiguous) {
    throw py::type_error(std::string("causal_moving_avg: could not view ") + what +
                         " as a C-contiguous array");
  }
  return contiguous;
}

// The average of `input`; with `history` (not None) a stream that had `seen` steps before it,
// returning (y, next history).
py::object CausalMovingAvg(const py::array& input, int64_t window, int64_t axis,
                           const std::string& edge_name, const py::object& history, int64_t seen,
                           const py::object& segment_ids) {
  cma::Edge edge;
  if (!cma::ParseName(edge_name.c_str(), &edge)) {
    throw py::value_error("causal_moving_avg: unknown edge '" + edge_name + "'");
  }
  const std::string dtype_name = py::str(input.dtype());
  cma::DType dtype;
  if (!cma::ParseName(dtype_name.c_str(), &dtype)) {
    throw py::type_error("causal_moving_avg: unsupported dtype " + dtype_name);
  }
  const py::array x = ContiguousOf(input, "the input");
  py::array y(x.dtype(), std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  const std::vector<int64_t> dims(x.shape(), x.shape() + x.ndim());
  cma::Call call{cma::GeometryOf(dims.data(), x.ndim(), axis),
                 dtype,
                 window,
                 edge,
                 x.data(),
                 y.mutable_data()};
  py::array state, next_state;
  int64_t next_seen = 0;
  if (!history.is_none()) {
    // Checked in Python: same dtype, x's shape with the axis window - 1 long, seen >= 0.
    state = ContiguousOf(history.cast<py::array>(), "the state's history");
    std::vector<py::ssize_t> state_shape(x.shape(), x.shape() + x.ndim());
    state_shape[axis] = window - 1;
    if (!state.dtype().is(x.dtype()) ||
        !std::equal(state_shape.begin(), state_shape.end(), state.shape())) {
      throw py::value_error("causal_moving_avg: the state's history does not fit x and window");
    }
    next_state = py::array(x.dtype(), state_shape);
    call.stream = true;
    call.history = state.data();
    call.seen = &seen;
    call.next_history = next_state.mutable_data();
    call.next_seen = &next_seen;
  }
  py::array ids;
  if (!segment_ids.is_none()) {
    // Checked in Python: int32 or int64, shape x.shape[:axis + 1].
    ids = ContiguousOf(segment_ids.cast<py::array>(), "segment_ids");
    const bool wide = ids.dtype().is(py::dtype::of<int64_t>());
    if (!wide && !ids.dtype().is(py::dtype::of<int32_t>())) {
      throw py::type_error("causal_moving_avg: segment_ids must be int32 or int64");
    }
    if (ids.ndim() != axis + 1 || !std::equal(x.shape(), x.shape() + axis + 1, ids.shape())) {
      throw py::value_error("causal_moving_avg: segment_ids must have shape x.shape[:axis + 1]");
    }
    call.ids_kind = wide ? cma::Call::Ids::kInt64 : cma::Call::Ids::kInt32;
    call.segment_ids = ids.data();
  }
  if (const std::string problem = cma::CheckCall(call); !problem.empty()) {
    throw py::value_error("causal_moving_avg: " + problem);
  }
  if (call.Elements() > 0 || call.IsStream()) Compute(call);
  if (call.IsStream()) return py::make_tuple(y, next_state, next_seen);
  return y;
}

}  // namespace

PYBIND11_MODULE(_numpy_core, m) {
  m.doc() =
      "CausalMovingAvg's C++ core for NumPy arrays (use causal_moving_avg.numpy_causal_moving_avg)";
  m.def("causal_moving_avg", &CausalMovingAvg, py::arg("x"), py::arg("window"), py::arg("axis"),
        py::arg("edge"), py::arg("history") = py::none(), py::arg("seen") = 0,
        py::arg("segment_ids") = py::none(),
        "Checked arguments only: x an ndarray of rank >= 1, window >= 1, 0 <= axis < x.ndim, "
        "edge one of EDGES; with history (x's dtype and shape with the axis window - 1 long) "
        "and seen >= 0, returns (y, next history, next seen); segment_ids (int32 or int64, shape "
        "x.shape[:axis + 1]) cut the windows at sequence starts.");
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
