// NumPy binding of the core: the same arithmetic as the TensorFlow op, for arrays outside a
// graph. Argument checks live in the Python wrapper (python/causal_moving_avg/_numpy.py); this
// layer only maps the array onto [outer, steps, inner], releases the GIL and shards the units.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "cc/kernels/causal_moving_avg_core.h"

namespace py = pybind11;
namespace cma = causal_moving_avg;

namespace {

// Units are independent and their boundaries do not depend on the thread count, so any split
// gives bitwise the same result as the TF kernel.
template <typename T>
void ComputeParallel(const cma::Plan& plan, const T* x, T* y) {
  const int64_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const int64_t threads = std::min<int64_t>(hardware, plan.num_units);
  if (threads <= 1) {
    cma::ComputeUnits<T>(plan, x, y, 0, plan.num_units);
    return;
  }
  std::vector<std::thread> workers;
  for (int64_t k = 0; k < threads; ++k) {
    const int64_t begin = plan.num_units * k / threads, end = plan.num_units * (k + 1) / threads;
    workers.emplace_back(
        [&plan, x, y, begin, end] { cma::ComputeUnits<T>(plan, x, y, begin, end); });
  }
  for (auto& worker : workers) worker.join();
}

// T is the C++ type with the array's layout (_Float16 is IEEE binary16, as numpy.float16).
template <typename T>
py::array Run(const py::array& input, int64_t window, int64_t axis, int edge) {
  // A C-contiguous view of the same dtype, copied only when the input has other strides.
  const py::array x = py::array::ensure(input, py::array::c_style);
  if (!x)
    throw py::type_error("causal_moving_avg: could not view the input as a C-contiguous array");
  py::array y(x.dtype(), std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  cma::Geometry geometry{1, x.shape(axis), 1};
  for (int64_t d = 0; d < axis; ++d) geometry.outer *= x.shape(d);
  for (int64_t d = axis + 1; d < x.ndim(); ++d) geometry.inner *= x.shape(d);
  if (x.size() == 0) return y;
  const cma::Plan plan = cma::MakeCpuPlan(geometry, window, static_cast<cma::Edge>(edge));
  const T* in = static_cast<const T*>(x.data());
  T* out = static_cast<T*>(y.mutable_data());
  {
    py::gil_scoped_release release;
    ComputeParallel<T>(plan, in, out);
  }
  return y;
}

}  // namespace

PYBIND11_MODULE(_numpy_core, m) {
  m.doc() =
      "CausalMovingAvg's C++ core for NumPy arrays (use causal_moving_avg.numpy_causal_moving_avg)";
  m.def(
      "causal_moving_avg",
      [](const py::array& x, int64_t window, int64_t axis, int edge) -> py::array {
        if (x.dtype().kind() == 'f') {
          switch (x.dtype().itemsize()) {
            case 2:
              return Run<_Float16>(x, window, axis, edge);
            case 4:
              return Run<float>(x, window, axis, edge);
            case 8:
              return Run<double>(x, window, axis, edge);
          }
        }
        throw py::type_error("causal_moving_avg: dtype must be float16, float32 or float64");
      },
      py::arg("x"), py::arg("window"), py::arg("axis"), py::arg("edge"),
      "Checked arguments only: x an ndarray of rank >= 1, window >= 1, 0 <= axis < x.ndim, "
      "edge 0 (zeros) or 1 (partial).");
}
