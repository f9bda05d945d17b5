"""How many roundings an output has, checked against exact arithmetic (fractions).

float64: the exact mean of the window, rounded once (the compensated sum and the corrected
product with the reciprocal); constant runs read back their value exactly. 16- and 32-bit: the
exact mean rounded to float64, then once to the dtype; constant runs exact too.
"""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

import causal_moving_avg as cma
from conftest import EDGES, jit_compile_values

CONSTANTS = [0.7, 1.0, 0.1, 1 / 3, 2 / 3, 123456.789, -2.5, 1e300, -3e-300, 9.87654321e-5]
WINDOWS = [1, 2, 3, 7, 10, 49, 64, 100, 1000, 4097]
NUMPY_DTYPES = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float64": np.float64,
}


def filled_steps(window, edge, steps):
    """The steps whose window holds only the constant ('zeros' counts the missing start as 0)."""
    return slice(0 if edge == "partial" else min(window - 1, steps), steps)


@pytest.mark.parametrize("dtype", sorted(NUMPY_DTYPES))
@pytest.mark.parametrize("edge", EDGES)
def test_constant_runs_read_back_their_value_exactly(dtype, edge):
    for value in CONSTANTS:
        with np.errstate(over="ignore"):
            x = np.full(1500, value, dtype=NUMPY_DTYPES[dtype])
        if not np.isfinite(x[0]) or x[0] == 0:
            continue  # outside this dtype's range
        for window in WINDOWS:
            y = cma.numpy_causal_moving_avg(x, window=window, edge=edge)
            part = y[filled_steps(window, edge, x.size)]
            assert (part == x[0]).all(), (dtype, edge, value, window, part[part != x[0]][:3])


@pytest.mark.parametrize("jit_compile", jit_compile_values())
def test_float64_constant_runs_exact_in_the_op_and_under_xla(jit_compile):
    x = tf.constant(np.full((2, 300, 3), 0.7))
    for window in (3, 49, 10):
        for edge in EDGES:
            fn = tf.function(
                lambda x, w=window, e=edge: cma.causal_moving_avg(x, w, edge=e), jit_compile=jit_compile
            )
            y = fn(x).numpy()[:, filled_steps(window, edge, 300)]
            assert (y == 0.7).all(), (window, edge)


def exact_means(x, window, edge):
    """Each window's exact mean, as a Fraction (the inputs are exact binary fractions)."""
    values = [Fraction(v) for v in x.tolist()]
    means = []
    total = Fraction(0)
    for t, value in enumerate(values):
        total += value
        if t >= window:
            total -= values[t - window]
        divisor = min(t + 1, window) if edge == "partial" else window
        means.append(total / divisor)
    return means


def rounded_once(exact):
    """The float64 nearest to an exact Fraction (ties to even), as one division rounds."""
    return exact.numerator / exact.denominator  # Python's int division rounds correctly


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("window", [2, 3, 7, 33, 250])
def test_float64_outputs_are_the_exact_mean_rounded_once(window, edge):
    """Every output is the float64 nearest to the exact mean, barring means within 2^-90 of the
    window's magnitude of a rounding boundary: the compensated running sum holds the window's sum
    that closely on data of one scale (values of very different scales are the accuracy issue's
    subject, not this test's)."""
    rng = np.random.default_rng(window)
    x = rng.standard_normal(3000) * 1000.0 + 10.0
    y = cma.numpy_causal_moving_avg(x, window=window, edge=edge)
    magnitudes = exact_means(np.abs(x), window, edge)
    mismatches = []
    for t, exact in enumerate(exact_means(x, window, edge)):
        want = rounded_once(exact)
        if y[t] != want and abs(Fraction(y[t]) - exact) > abs(Fraction(want) - exact) + magnitudes[
            t
        ] * Fraction(1, 2**90):
            mismatches.append((t, y[t], want))
    assert mismatches == []


# A NaN's sign and payload in each dtype's bits, and the one NaN every output has.
NAN_BITS = {
    "float16": (np.uint16, [0xFE00, 0x7E01, 0xFE3F], 0x7E00),
    "bfloat16": (np.uint16, [0xFFC0, 0x7FC1, 0xFFFF], 0x7FC0),
    "float32": (np.uint32, [0xFFC00000, 0x7FC00001, 0xFFC12345], 0x7FC00000),
    "float64": (np.uint64, [0xFFF8000000000000, 0x7FF8000000000001, 0xFFF8000000012345], 0x7FF8000000000000),
}


@pytest.mark.parametrize("dtype", sorted(NUMPY_DTYPES))
def test_every_nan_output_is_the_positive_quiet_nan_on_every_path(dtype):
    # Which of two NaNs a sum returns is left to the hardware and to how the compiler orders the
    # operands, so windows holding NaNs of both signs and payloads, or +Inf beside -Inf, could
    # differ between builds in the NaN's bits. Every path gives the one positive quiet NaN.
    uint, nans, canonical = NAN_BITS[dtype]
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3, 3000, 2)).astype(NUMPY_DTYPES[dtype])
    bits = x.view(uint)
    for k, t in enumerate(rng.choice(3000, size=60, replace=False)):
        bits[k % 3, t, k % 2] = nans[k % 3]
    bits[:, 2000:2040:2, :] = nans[0]  # runs of NaNs of both signs
    bits[:, 2001:2040:2, :] = np.float64(np.nan).astype(NUMPY_DTYPES[dtype]).view(uint)
    x[:, 1500, :], x[:, 1502, :] = np.inf, -np.inf
    ids = np.repeat(np.arange(30), 100)[None, :].repeat(3, axis=0)
    for window in (1, 3, 16, 33, 300):
        expected = np.isnan(reference_sums(x.astype(np.float64), window))
        outputs = {"numpy": cma.numpy_causal_moving_avg(x, window)}
        for jit_compile in (False, True):
            if jit_compile and not cma.build_info()["xla"]:
                continue
            fn = tf.function(lambda v, w=window: cma.causal_moving_avg(v, w), jit_compile=jit_compile)
            outputs[f"tf.function jit_compile={jit_compile}"] = fn(x).numpy()
        outputs["eager"] = cma.causal_moving_avg(x, window).numpy()
        y, state = cma.causal_moving_avg(x[:, :1700], window, return_state=True)
        outputs["stream"] = np.concatenate(
            [y.numpy(), cma.causal_moving_avg(x[:, 1700:], window, initial_state=state).numpy()], axis=1
        )
        packed = {
            "numpy, segment_ids": cma.numpy_causal_moving_avg(x, window, segment_ids=ids),
            "eager, segment_ids": cma.causal_moving_avg(x, window, segment_ids=ids).numpy(),
        }
        for path, y in {**outputs, **packed}.items():
            nan = np.isnan(y.astype(np.float64))
            assert (y.view(uint)[nan] == canonical).all(), (path, window, hex(y.view(uint)[nan][0]))
        for path, y in outputs.items():
            assert np.array_equal(np.isnan(y.astype(np.float64)), expected), (path, window)
            assert np.array_equal(y.view(uint), outputs["numpy"].view(uint)), (path, window)
        eager_ids, numpy_ids = packed["eager, segment_ids"], packed["numpy, segment_ids"]
        assert np.array_equal(eager_ids.view(uint), numpy_ids.view(uint)), window


def reference_sums(x, window):
    """Each step's window sum along axis 1, summed directly in float64 (NaN where the window holds
    a NaN, or +Inf and -Inf)."""
    padded = np.concatenate([np.zeros_like(x[:, : window - 1]), x], axis=1)
    with np.errstate(invalid="ignore"):  # +Inf + -Inf
        return sum(padded[:, k : k + x.shape[1]] for k in range(window))
