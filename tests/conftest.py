"""Shared test set-up and the independent references every test compares against."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from causal_moving_avg import _numpy_core  # noqa: E402  (no TensorFlow: just the core's lists)

# CI replays the same examples every run (a red CI must be reproducible); elsewhere each run
# explores new ones.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def reference_moving_avg(x, window, axis, edge="zeros"):
    """The definition, written plainly in float64: the sum of each window over its divisor."""
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    y = np.empty_like(x)
    divisors = {"zeros": lambda t, start: window, "partial": lambda t, start: t - start + 1}
    for t in range(x.shape[-1]):  # Inf - Inf and NaN propagate as in any direct sum
        start = max(0, t - window + 1)
        divisor = divisors[edge](t, start)
        with np.errstate(invalid="ignore"):
            y[..., t] = x[..., start : t + 1].sum(axis=-1) / divisor
    return np.moveaxis(y, -1, axis)


def reference_by_prefix_sums(x, window, axis, edge="zeros"):
    """The same definition for finite inputs via long-double prefix sums: O(T) for long windows.
    Its rounding (about 1e-19 of the largest prefix) is far below float32's."""
    x = np.moveaxis(np.asarray(x, dtype=np.longdouble), axis, -1)
    prefix = np.concatenate([np.zeros(x.shape[:-1] + (1,), np.longdouble), np.cumsum(x, axis=-1)], axis=-1)
    steps = x.shape[-1]
    ends = np.arange(1, steps + 1)
    starts = np.maximum(ends - window, 0)
    divisor = {"zeros": np.full(steps, window), "partial": ends - starts}[edge]
    y = (prefix[..., ends] - prefix[..., starts]) / divisor
    return np.moveaxis(y.astype(np.float64), -1, axis)


def keras_conv1d_moving_avg(x, window):
    """What users do today: a frozen causal Conv1D with all weights 1/window, applied to each
    channel of a [batch, steps, channels] float32 array separately (depthwise)."""
    import keras

    x = np.asarray(x, dtype=np.float32)
    batch, steps, channels = x.shape
    layer = keras.layers.Conv1D(
        filters=1, kernel_size=window, padding="causal", use_bias=False, trainable=False
    )
    layer.build((None, steps, 1))
    layer.set_weights([np.full((window, 1, 1), 1.0 / window, dtype=np.float32)])
    per_channel = np.moveaxis(x, 2, 1).reshape(batch * channels, steps, 1)
    y = np.asarray(layer(per_channel))
    return np.moveaxis(y.reshape(batch, channels, steps), 1, 2)


# The edge modes and dtypes the build offers (the core's own lists, exported by the NumPy
# binding): tests cover every one, and the references above refuse a mode they do not know.
EDGES = _numpy_core.EDGES
DTYPE_NAMES = _numpy_core.DTYPES
# How the CPU cuts the work (span elements, chunk steps, ...), for tests aimed at its edges.
CPU_PLAN = _numpy_core.CPU_PLAN

# Allowed error per dtype, relative to the window's magnitude (the mean of |x| over the window):
# one rounding of the result, plus the float64 accumulator's error. The one table of the tests.
_RTOL = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 2e-7, "float64": 1e-12}


def rtol(dtype):
    """The tolerance for a NumPy, ml_dtypes or TensorFlow dtype, or a dtype's name."""
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if not isinstance(name, str) or name not in _RTOL:
        name = np.dtype(dtype).name
    return _RTOL[name]


def jit_compile_values():
    """jit_compile settings to test: True only in builds with the XLA kernel (TensorFlow releases
    whose wheel lacks what it needs build without it; test_build checks which those are)."""
    import causal_moving_avg

    no_xla = pytest.mark.skip(reason="this build has no XLA kernel (see test_build)")
    return [False, pytest.param(True, marks=[] if causal_moving_avg.build_info()["xla"] else no_xla)]


@pytest.fixture(autouse=True)
def _seeded():
    np.random.seed(0)
