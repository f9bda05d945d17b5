"""numpy_causal_moving_avg: the same core on NumPy arrays, against the float64 reference."""

import subprocess
import sys
import threading
import time

import ml_dtypes
import numpy as np
import pytest

from causal_moving_avg import causal_moving_avg, numpy_causal_moving_avg
from conftest import DTYPE_NAMES, EDGES, reference_moving_avg, rtol


@pytest.mark.parametrize(
    "dtype", [ml_dtypes.bfloat16 if n == "bfloat16" else np.dtype(n) for n in DTYPE_NAMES]
)
@pytest.mark.parametrize("shape,axis", [((3000,), 0), ((4, 900, 3), 1), ((4, 900, 3), -1), ((700, 2, 2), 0)])
@pytest.mark.parametrize("window", [1, 3, 64, 5000])
@pytest.mark.parametrize("edge", EDGES)
def test_matches_reference(dtype, shape, axis, window, edge):
    a = (np.random.randn(*shape) * 10).astype(dtype)
    y = numpy_causal_moving_avg(a, window=window, axis=axis, edge=edge)
    assert isinstance(y, np.ndarray) and y.dtype == dtype and y.shape == a.shape
    a64 = a.astype(np.float64)
    expected = reference_moving_avg(a64, window, axis, edge)
    scale = reference_moving_avg(np.abs(a64), window, axis, edge)
    # Relative to the window's magnitude, plus half a step where the result is subnormal.
    floor = float(ml_dtypes.finfo(dtype).smallest_subnormal)
    assert np.all(np.abs(y.astype(np.float64) - expected) <= rtol(dtype) * scale + floor)


def test_default_axis_is_conv1d_steps_axis_and_lists_work():
    a = np.random.randn(2, 40, 3)
    np.testing.assert_allclose(numpy_causal_moving_avg(a, 4), reference_moving_avg(a, 4, 1), rtol=1e-12)
    np.testing.assert_allclose(numpy_causal_moving_avg([1, 2, 3, 4], 2), [0.5, 1.5, 2.5, 3.5])


def test_non_contiguous_views_and_a_new_array():
    base = np.random.randn(60, 80)
    for view, axis in [(base[::2, 1::3], 0), (base.T, 0), (base[:, ::-1], 1)]:
        y = numpy_causal_moving_avg(view, window=5, axis=axis)
        np.testing.assert_allclose(y, reference_moving_avg(view, 5, axis), rtol=1e-12, atol=1e-12)
        assert not np.shares_memory(y, base)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_same_bits_as_the_tensorflow_op(dtype):
    a = (np.random.randn(8, 5000, 3) * 100).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    a[1, 77, 2] = np.nan
    a[2, 100:110, 1] = 1e-42  # subnormal in float32 (and float64 keeps them as they are)
    ours = numpy_causal_moving_avg(a, 33)
    np.testing.assert_array_equal(ours.view(np.uint8), causal_moving_avg(a, 33).numpy().view(np.uint8))


def test_non_finite_stays_in_its_windows():
    a = np.random.randn(2000)
    a[[10, 500, 501]] = [np.inf, np.nan, -np.inf]
    y = numpy_causal_moving_avg(a, window=7)
    expected = reference_moving_avg(a, 7, 0)
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(y[~finite], expected[~finite])
    np.testing.assert_allclose(y[finite], expected[finite], rtol=1e-12)


def test_releases_the_gil_while_computing():
    """Another Python thread keeps running while a long call computes: the largest pause it sees
    is far shorter than the call (holding the GIL would pause it for the whole call)."""
    a = np.random.randn(1, 20_000_000, 1)
    numpy_causal_moving_avg(a, 3)  # warm-up
    start = time.perf_counter()
    numpy_causal_moving_avg(a, 3)
    call = time.perf_counter() - start
    pauses = []
    # Up to three tries: the call's own threads take every core, so the OS may still pause this
    # one now and then; holding the GIL would pause it for a whole call in every try.
    for _ in range(3):
        stamps = []
        worker = threading.Thread(target=lambda: [numpy_causal_moving_avg(a, 3) for _ in range(3)])
        worker.start()
        while worker.is_alive():
            stamps.append(time.perf_counter())
        worker.join()
        assert len(stamps) > 100
        pauses.append(np.max(np.diff(stamps)))
        if pauses[-1] < 0.5 * call:
            return
    raise AssertionError(f"longest pauses {pauses} s against a call of {call} s")


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        ({"window": 0}, ValueError, "window must be an int >= 1"),
        ({"window": 2.0}, TypeError, "window must be an int >= 1"),
        ({"axis": 5}, ValueError, "axis 5 is out of range"),
        ({"edge": "same"}, ValueError, "edge must be one of"),
    ],
)
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        numpy_causal_moving_avg(np.zeros((2, 3)), **kwargs)


@pytest.mark.parametrize("a", [np.zeros(3, np.int64), np.zeros(3, np.complex128), np.array(["a"])])
def test_bad_dtypes(a):
    with pytest.raises(TypeError, match="a must have dtype float16, bfloat16, float32, float64; got"):
        numpy_causal_moving_avg(a)


NUMPY_ONLY = """
import sys
import numpy as np
from causal_moving_avg import numpy_causal_moving_avg
assert numpy_causal_moving_avg(np.arange(4.0), 2).tolist() == [0.0, 0.5, 1.5, 2.5]
heavy = sorted(name for name in ("tensorflow", "keras") if name in sys.modules)
print("loaded:", heavy)
"""


def test_numpy_function_loads_neither_tensorflow_nor_keras():
    result = subprocess.run([sys.executable, "-c", NUMPY_ONLY], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "loaded: []"


def test_scalar():
    with pytest.raises(ValueError, match="rank >= 1"):
        numpy_causal_moving_avg(np.float64(1.0))


def test_big_endian_input_gives_the_native_result():
    x = np.random.default_rng(1).standard_normal((3, 40))
    expected = numpy_causal_moving_avg(x, 5)
    np.testing.assert_array_equal(numpy_causal_moving_avg(x.astype(">f8"), 5), expected)


def test_typed_array_likes_keep_their_dtype_as_for_the_op():
    # Integers in a typed array-like are refused, not cast (a list of Python numbers is cast).
    with pytest.raises(TypeError, match="must have dtype .*got int32"):
        numpy_causal_moving_avg(memoryview(np.arange(5, dtype=np.int32)), 2)
    with pytest.raises(TypeError, match="must have dtype .*got int32"):
        causal_moving_avg(memoryview(np.arange(5, dtype=np.int32)), 2)
    y = numpy_causal_moving_avg(memoryview(np.arange(4, dtype=np.float32)), 2)
    assert y.dtype == np.float32 and y.tolist() == [0.0, 0.5, 1.5, 2.5]


def test_masked_array_is_refused():
    with pytest.raises(TypeError, match="a must not be a masked array"):
        numpy_causal_moving_avg(np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0]), 2)
