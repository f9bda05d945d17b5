"""Every output is as accurate as summing its own window: what came before the window leaves no
trace, whatever its size.

The bound the README states, checked here against exact arithmetic (integers): an output differs
from its window's exact mean by at most half a unit in the last place of its dtype, plus 2^-40 of
the mean |x| over its window for 16- and 32-bit dtypes (2^-50 for float64). A window that holds a
NaN reads NaN, one that holds +Inf and -Inf reads NaN, one that holds an Inf reads that Inf.
"""

import os

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import causal_moving_avg as cma
from conftest import CPU_PLAN, EDGES, jit_compile_values, keras_conv1d_moving_avg

NUMPY_DTYPES = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float64": np.float64,
}
# Beyond one rounding of the output: the error allowed relative to the window's mean |x|.
WINDOW_TOLERANCE = {"float16": 2.0**-40, "bfloat16": 2.0**-40, "float32": 2.0**-40, "float64": 2.0**-50}
SCALE = 2**1074  # every finite float64 is an integer multiple of 2^-1074


def exact_means(x, window, edge):
    """Each window's mean along the last axis of a 2-D array, exactly summed (Python integers),
    rounded once to float64; and each window's mean |x|. Non-finite values as a direct sum
    treats them."""
    x = np.asarray(x, dtype=np.float64)
    means = np.empty_like(x)
    magnitudes = np.empty_like(x)
    for lane, row in enumerate(x):
        finite = np.isfinite(row)
        ints = [0] * (row.size + 1)
        abs_ints = [0] * (row.size + 1)
        for t, v in enumerate(row.tolist()):
            num, den = v.as_integer_ratio() if finite[t] else (0, 1)
            value = num * (SCALE // den)
            ints[t + 1] = ints[t] + value
            abs_ints[t + 1] = abs_ints[t] + abs(value)
        nans = np.concatenate([[0], np.cumsum(np.isnan(row))])
        pos = np.concatenate([[0], np.cumsum(row == np.inf)])
        neg = np.concatenate([[0], np.cumsum(row == -np.inf)])
        for t in range(row.size):
            start = max(0, t + 1 - window)
            divisor = window if edge == "zeros" else t + 1 - start
            n_nan, n_pos, n_neg = (c[t + 1] - c[start] for c in (nans, pos, neg))
            if n_nan or (n_pos and n_neg):
                means[lane, t] = np.nan
            elif n_pos or n_neg:
                means[lane, t] = np.inf if n_pos else -np.inf
            else:
                means[lane, t] = (ints[t + 1] - ints[start]) / (divisor * SCALE)
            magnitudes[lane, t] = (abs_ints[t + 1] - abs_ints[start]) / (divisor * SCALE)
    return means, magnitudes


def violations(y, x, window, edge, dtype):
    """Outputs (lane, step, got, exact) outside the bound above."""
    y = np.asarray(y).astype(np.float64)
    exact, magnitude = exact_means(x, window, edge)
    np_dtype = np.dtype(NUMPY_DTYPES[dtype])
    finfo = ml_dtypes.finfo(np_dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = exact.astype(np_dtype).astype(np.float64)
        half_ulp = np.spacing(np.maximum(np.abs(rounded), np.abs(y)).astype(np_dtype)).astype(np.float64) / 2
        half_ulp = np.maximum(half_ulp, float(finfo.smallest_subnormal) / 2)
        allowed = half_ulp + WINDOW_TOLERANCE[dtype] * magnitude
        finite_ok = np.abs(y - exact) <= allowed
    same_special = (np.isnan(exact) & np.isnan(y)) | (np.isinf(exact) & (exact == y))
    # A finite mean beyond the dtype's range rounds to Inf.
    overflow = np.isfinite(exact) & np.isinf(rounded) & (y == rounded)
    bad = ~(np.where(np.isfinite(exact) & np.isfinite(y), finite_ok, same_special) | overflow)
    return [(int(i), int(j), y[i, j], exact[i, j]) for i, j in zip(*np.nonzero(bad), strict=True)][:5]


def as_dtype(x, dtype):
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=np.float64).astype(NUMPY_DTYPES[dtype])


def numpy_path(x, window, edge):
    return cma.numpy_causal_moving_avg(x, window=window, axis=1, edge=edge)


def op_path(x, window, edge, jit_compile=None):
    tensor = tf.constant(x)
    if jit_compile is None:
        return cma.causal_moving_avg(tensor, window, axis=1, edge=edge).numpy()
    fn = tf.function(lambda t: cma.causal_moving_avg(t, window, axis=1, edge=edge), jit_compile=jit_compile)
    return fn(tensor).numpy()


# --- The patterns that used to spoil every later output ---------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_after_a_float_max_sentinel_ones_read_one_again(dtype):
    big = float(ml_dtypes.finfo(NUMPY_DTYPES[dtype]).max)
    x = np.ones((1, 40000, 4))
    x[0, 10, :] = big
    y = cma.numpy_causal_moving_avg(as_dtype(x, dtype), window=24).astype(np.float64)
    assert (y[0, 10 + 24 :] == 1.0).all()
    assert (y[0, 10 : 10 + 24] > 1.0).all()


@pytest.mark.parametrize("window", [5, 100, 4096])
def test_after_a_spike_the_first_window_without_it_is_exact(window):
    x = np.ones((1, 70000), np.float32)
    x[0, 3] = 1e30
    x[0, 50000] = -3.4e38
    y = cma.numpy_causal_moving_avg(x, window=window, axis=1)
    clean = np.ones(y.shape[1], bool)
    clean[3 : 3 + window] = False
    clean[50000 : 50000 + window] = False
    clean[: window - 1] = False  # zeros before the start
    assert (y[0, clean] == 1.0).all()


def test_a_ramp_under_a_large_value_is_exact_once_the_large_value_has_left():
    window, steps = 5, 32768
    t = np.arange(steps)
    x = (2.0**-6 + t * 2.0**-29).astype(np.float32)
    x[np.arange(0, steps - 2 * window, window)] = 2.0**30  # in every window until the last few
    x = x.reshape(1, -1)
    for y in (numpy_path(x, window, "zeros"), op_path(x, window, "zeros")):
        assert violations(y, x, window, "zeros", "float32") == []
        exact, _ = exact_means(x, window, "zeros")
        tail = slice(steps - window, steps)
        assert (y[0, tail] == exact[0, tail].astype(np.float32)).all()


@pytest.mark.parametrize("window", [3, 1000])
@pytest.mark.parametrize("edge", EDGES)
def test_float64_overflow_beside_an_infinity_reads_the_infinity(window, edge):
    """Finite values whose sum overflows, in a window with an Inf of the other sign: the window
    reads that Inf (as a direct sum that meets the Inf first), not the NaN of Inf - Inf."""
    big = np.finfo(np.float64).max
    x = np.zeros((2, 3000))
    x[0, 1000:1003] = [big, big, -np.inf]
    x[1, 500:503] = [-np.inf, -big, -big]  # 2000 steps before the next: no window holds both
    x[1, 2500:2503] = [-big, -big, np.inf]
    paths = [numpy_path(x, window, edge), op_path(x, window, edge)]
    if cma.build_info()["xla"]:
        paths.append(op_path(x, window, edge, jit_compile=True))
    for y in paths:
        assert violations(y, x, window, edge, "float64") == []
        assert y[0, 1002] == -np.inf and y[1, 2502] == np.inf


@pytest.mark.parametrize("jit_compile", jit_compile_values())
def test_spikes_leave_no_trace_in_the_op_and_under_xla(jit_compile):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 5000, 2)).astype(np.float32)
    x[0, 100, 0], x[1, 2000, 1], x[2, 4000, :] = 3.4e38, -1e20, 1e12
    for window in (3, 40, 1000):
        y = op_path(x, window, "zeros", jit_compile=jit_compile)
        lanes = np.moveaxis(x, 2, 1).reshape(-1, 5000)
        got = np.moveaxis(y, 2, 1).reshape(-1, 5000)
        assert violations(got, lanes, window, "zeros", "float32") == [], window


def test_sentinel_data_matches_keras_conv1d():
    """The layer users replace agrees once the sentinel has left (its float32 convolution sums
    each window directly)."""
    x = np.ones((1, 3000, 2), np.float32)
    x[0, 500, :] = -999999.0
    x[0, 1500, 1] = 1e9
    y = cma.numpy_causal_moving_avg(x, window=16)
    reference = keras_conv1d_moving_avg(x, 16)
    settled = np.ones(3000, bool)
    settled[:15] = settled[500:516] = settled[1500:1516] = False
    np.testing.assert_array_equal(y[0, settled], reference[0, settled])


# --- Random series with what real series carry -------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "window"),
    [("float32", 17), ("float32", 64), ("float32", 4096), ("float16", 33), ("bfloat16", 8192)],
)
@pytest.mark.parametrize("edge", EDGES)
def test_a_long_series_meets_the_bound_where_its_spans_run_side_by_side(dtype, window, edge):
    """A long series of 16- or 32-bit values with W of 17-64 or 4096-8192: the CPU runs its spans
    after the first four at a time side by side in vector lanes. With constant runs across the cuts
    between spans and spikes, sentinels and NaN/Inf near them, every output meets the bound, a row
    of a batch has the bits it has alone, and the op's bits are NumPy's."""
    span = CPU_PLAN["span_elements"]
    steps = 6 * span + 9000
    rng = np.random.default_rng([window, len(edge), len(dtype)])
    big = float(ml_dtypes.finfo(NUMPY_DTYPES[dtype]).max)
    x = rng.standard_normal((2, steps)) * 100
    for k in range(1, 7):
        cut = k * span
        x[0, cut - window : cut + window] = 3.0
        x[1, cut + int(rng.integers(-window, window))] = [big, -big, 1e9, -999999.0, np.nan, np.inf][k - 1]
    # Large values taken out again within a window: what a sum keeps of the small ones between
    # depends on the order of its additions.
    at = rng.choice(steps - window, size=500, replace=False)
    x[1, at] = rng.choice([-1e4, 1e4], size=500) * (1e16 if dtype == "float32" else 1.0)
    x[1, at + rng.integers(1, window + 1, size=500)] = -x[1, at]
    x = as_dtype(x, dtype)
    y = numpy_path(x, window, edge)
    assert violations(y, x, window, edge, dtype) == []
    np.testing.assert_array_equal(numpy_path(x[1:], window, edge), y[1:])
    for jit_compile in (None, False, True) if cma.build_info()["xla"] else (None, False):
        np.testing.assert_array_equal(op_path(x, window, edge, jit_compile), y)


@st.composite
def series(draw):
    """[lanes, steps] float64 values of a dtype: noise at some scale with spikes 1e10-1e38 times
    it, sentinels, constant runs, ramps, NaN/Inf and subnormals."""
    dtype = draw(st.sampled_from(sorted(NUMPY_DTYPES)))
    lanes = draw(st.sampled_from([1, 3, 4, 8, 17]))
    steps = draw(st.integers(1, 3000 if lanes > 1 else 6000))
    window = draw(st.sampled_from([1, 2, 3, 5, 16, 17, 33, 100, 256, 257, 1000, 4096, 5000]))
    edge = draw(st.sampled_from(EDGES))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    finfo = ml_dtypes.finfo(NUMPY_DTYPES[dtype])
    scale = 10.0 ** draw(st.sampled_from([-3, 0, 2, 5]))
    x = rng.standard_normal((lanes, steps)) * scale
    for _ in range(draw(st.integers(0, 4))):  # constant runs and ramps
        start = int(rng.integers(0, steps))
        end = min(steps, start + int(rng.integers(1, 3000)))
        if rng.random() < 0.5:
            x[:, start:end] = rng.standard_normal() * scale
        else:
            x[:, start:end] = scale * (1 + np.arange(end - start) * 2.0 ** -int(rng.integers(3, 30)))
    specials = [float(finfo.max), -float(finfo.max), 1e9, -999999.0, float(finfo.smallest_subnormal)]
    for _ in range(draw(st.integers(0, 6))):  # spikes and sentinels
        lane, step = int(rng.integers(0, lanes)), int(rng.integers(0, steps))
        if rng.random() < 0.5:
            x[lane, step] = scale * 10.0 ** rng.uniform(10, 38) * rng.choice([-1, 1])
        else:
            x[lane, step] = rng.choice(specials)
    if draw(st.booleans()):  # NaN/Inf
        for value in (np.nan, np.inf, -np.inf):
            x[int(rng.integers(0, lanes)), int(rng.integers(0, steps))] = value
    with np.errstate(over="ignore"):
        x = np.clip(x, -float(finfo.max), float(finfo.max), where=np.isfinite(x), out=x)
    return as_dtype(x, dtype), window, edge, dtype, draw(st.booleans())


# CMA_PROPERTY_EXAMPLES=3000 for a thorough run (CI runs the default, with fixed examples).
property_settings = settings(
    max_examples=int(os.environ.get("CMA_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@property_settings
@given(case=series())
def test_random_series_with_spikes_and_sentinels_meet_the_bound(case):
    x, window, edge, dtype, channels_last = case
    if channels_last:  # [steps, lanes], averaged along axis 0: the lanes side by side in memory
        columns = np.ascontiguousarray(x.T)
        y = cma.numpy_causal_moving_avg(columns, window=window, axis=0, edge=edge).T
    else:
        y = numpy_path(x, window, edge)
    assert violations(y, x, window, edge, dtype) == []
    if x.shape[1] <= 2000:  # the op gives the same bits (checked for all shapes elsewhere)
        if channels_last:
            got = cma.causal_moving_avg(tf.constant(columns), window, axis=0, edge=edge).numpy().T
        else:
            got = op_path(x, window, edge)
        np.testing.assert_array_equal(got, y)


@st.composite
def packed_series(draw):
    """series() cut into sequences by ids: lengths uniform in [1, 2 x mean) (1-step sequences,
    runs of short ones, sequences longer than W), ids that may return to an earlier value."""
    x, window, edge, dtype, _ = draw(series())
    mean = draw(st.sampled_from([1, 3, 9, 16, 17, 64, 1000]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lanes, steps = x.shape
    ids = np.empty((lanes, steps), np.int64)
    for lane in range(lanes):
        t, sequence = 0, 0
        while t < steps:
            end = min(steps, t + int(rng.integers(1, 2 * mean)))
            ids[lane, t:end] = sequence % 3 if rng.random() < 0.2 else sequence
            t, sequence = end, sequence + 1
    return x, ids.astype(draw(st.sampled_from([np.int32, np.int64]))), window, edge, dtype


@property_settings
@given(case=packed_series())
def test_random_packed_sequences_meet_the_bound_within_each_sequence(case):
    """Each sequence's outputs meet the bound against its own exact means (its windows cut at its
    start), as if it were a series of its own; the op gives the NumPy binding's bits."""
    x, ids, window, edge, dtype = case
    y = cma.numpy_causal_moving_avg(x, window=window, axis=1, edge=edge, segment_ids=ids)
    for lane in range(x.shape[0]):
        starts = np.flatnonzero(np.diff(ids[lane]) != 0) + 1
        for begin, end in zip(np.r_[0, starts], np.r_[starts, x.shape[1]], strict=True):
            piece = slice(begin, end)
            bad = violations(y[lane : lane + 1, piece], x[lane : lane + 1, piece], window, edge, dtype)
            assert bad == [], (lane, begin, end)
    if x.shape[1] <= 2000:
        got = cma.causal_moving_avg(tf.constant(x), window, axis=1, edge=edge, segment_ids=ids)
        np.testing.assert_array_equal(got.numpy(), y)


@pytest.mark.parametrize(
    ("lanes", "window"),
    [(lanes, window) for lanes in (2, 3, 4, 5, 8, 12, 16) for window in (2, 3, 5)]
    + [(3, 16), (6, 11), (12, 16), (4, 9)],
)
@pytest.mark.parametrize("edge", EDGES)
def test_short_windows_give_each_channel_the_bits_of_its_series_alone(lanes, window, edge):
    """Short windows are summed directly (up to 16 steps; fewer for 4, 8 and 16 channels), per
    channel in the order of a single series: channels side by side give each one the bits it has
    alone, also where the float64 sums round."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((lanes, 3000))
    big = rng.choice([-1e20, 1e20], size=(lanes, 300))  # a large value, then its negative
    where = np.stack([rng.choice(3000 - window, size=300, replace=False) for _ in range(lanes)])
    for lane in range(lanes):  # cancellation: what a window loses depends on the order of its sums
        x[lane, where[lane]] = big[lane]
        x[lane, where[lane] + rng.integers(1, window + 1)] = -big[lane]
    x = x.astype(np.float32)
    columns = np.ascontiguousarray(x.T)  # [steps, lanes]: the channels side by side in memory
    together = cma.numpy_causal_moving_avg(columns, window=window, axis=0, edge=edge).T
    alone = numpy_path(x, window, edge)  # each lane a series of its own
    np.testing.assert_array_equal(together, alone)
    assert violations(together, x, window, edge, "float32") == []
