"""Streams: a moving average that continues across calls (`initial_state`, `return_state`).

Feeding a series in chunks of any lengths gives what one call on the whole series gives, to the
numerics bound (checked against exact sums, as tests/test_accuracy.py does), and bitwise whenever
the window sums are exact (float16 inputs, integer-valued data). Every path computes the same bits:
eager, tf.function, XLA, a tf.while_loop step loop, NumPy.
"""

import os
import pathlib

import numpy as np
import pytest
import tensorflow as tf
from test_accuracy import NUMPY_DTYPES, as_dtype, violations

import causal_moving_avg as cma
from conftest import EDGES, jit_compile_values, reference_moving_avg

DTYPES = list(NUMPY_DTYPES)
DATA = pathlib.Path(__file__).parent / "data"


def random_cuts(rng, steps, pieces):
    """Chunk boundaries: 0, some cuts (chunks of one step and empty ones included), steps."""
    cuts = sorted(rng.integers(0, steps + 1, size=pieces).tolist())
    return [0, *cuts, steps]


def stream_op(x, window, edge, bounds, state=None, **kwargs):
    """The op over chunks x[:, a:b], each call continuing the last one's state."""
    outputs = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        y, state = cma.causal_moving_avg(
            x[:, a:b], window, axis=1, edge=edge, initial_state=state, return_state=True, **kwargs
        )
        outputs.append(np.asarray(y))
    return np.concatenate(outputs, axis=1), state


def stream_numpy(x, window, edge, bounds, state=None):
    outputs = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        y, state = cma.numpy_causal_moving_avg(
            x[:, a:b], window, axis=1, edge=edge, initial_state=state, return_state=True
        )
        outputs.append(y)
    return np.concatenate(outputs, axis=1), state


def lanes(y):
    """[batch, steps, channels] as [lanes, steps] for violations()."""
    y = np.asarray(y).astype(np.float64)
    return np.moveaxis(y, 1, 2).reshape(-1, y.shape[1])


# --- Chunked streams give the whole stream's outputs ---------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("window", [1, 3, 40, 500])  # 500: longer than the stream
def test_random_chunkings_meet_the_bound_of_the_whole_stream(dtype, edge, window):
    rng = np.random.default_rng([window, len(dtype), len(edge)])
    steps = 300
    x = as_dtype(rng.normal(size=(2, steps, 3)) * 10.0 ** rng.integers(-3, 4, size=(2, 1, 3)), dtype)
    x[0, 150, 1] = 1e4 if dtype != "float64" else 1e300  # a spike inside some chunk
    for trial in range(3):
        bounds = random_cuts(rng, steps, pieces=[1, 4, 25][trial])
        y, state = stream_op(x, window, edge, bounds)
        y_numpy, numpy_state = stream_numpy(x, window, edge, bounds)
        assert np.array_equal(y, y_numpy, equal_nan=True), bounds  # the same bits, NumPy or op
        assert violations(lanes(y), lanes(x), window, edge, dtype) == [], bounds
        assert int(state.seen) == steps == int(numpy_state.seen)
        # The state holds the last W - 1 inputs, zeros before the stream began.
        expected = np.concatenate([np.zeros((2, max(0, window - 1 - steps), 3), x.dtype), x], axis=1)
        expected = expected[:, expected.shape[1] - (window - 1) :]
        assert np.array_equal(np.asarray(state.history), expected)
        assert np.array_equal(numpy_state.history, expected)


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("window", [2, 7, 64, 1000])
def test_float16_streams_equal_the_whole_call_bitwise(edge, window):
    # float16 windows of up to 2^13 values sum exactly in float64, so every chunking rounds the
    # same exact sum (README: when streams are bitwise equal).
    rng = np.random.default_rng(window)
    x = rng.normal(size=(3, 700, 2)).astype(np.float16)
    whole = cma.numpy_causal_moving_avg(x, window, axis=1, edge=edge)
    for pieces in (1, 9, 60):
        y, _ = stream_op(x, window, edge, random_cuts(rng, 700, pieces))
        assert np.array_equal(y, whole)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_integer_valued_streams_equal_the_whole_call_bitwise(dtype):
    rng = np.random.default_rng(5)
    x = rng.integers(-1000, 1000, size=(2, 2000, 4)).astype(dtype)
    for window in (3, 300):
        whole = cma.numpy_causal_moving_avg(x, window, axis=1, edge="partial")
        y, _ = stream_numpy(x, window, "partial", random_cuts(rng, 2000, 30))
        assert np.array_equal(y, whole)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("window", [5, 40])
def test_chunks_of_a_few_steps_meet_the_bound_of_the_whole_stream(dtype, edge, window):
    # The CPU sums the outputs of a short chunk straight from the state instead of staging them:
    # chunks of 1-4 steps, more channels than it sums side by side (64), spikes and a NaN.
    rng = np.random.default_rng([window, len(dtype), len(edge), 7])
    steps = 90
    x = as_dtype(rng.normal(size=(2, steps, 70)) * 10.0 ** rng.integers(-3, 4, size=(2, 1, 70)), dtype)
    x[1, 30, 66] = 1e4 if dtype != "float64" else 1e300
    x[0, 47, 3] = np.nan
    bounds = np.cumsum([0, *rng.integers(1, 5, size=steps)]).tolist()
    bounds = [b for b in bounds if b < steps] + [steps]
    y, state = stream_op(x, window, edge, bounds)
    y_numpy, _ = stream_numpy(x, window, edge, bounds)
    assert np.array_equal(y, y_numpy, equal_nan=True)
    assert violations(lanes(y), lanes(x), window, edge, dtype) == []
    assert np.array_equal(np.asarray(state.history), x[:, steps - (window - 1) :], equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("edge", EDGES)
def test_many_rows_give_each_row_the_bits_it_has_alone(dtype, edge):
    # More rows than the CPU stages at once (it then stages one row at a time per thread): each
    # row's outputs and state are those it gets in a call of a few rows, NumPy's too.
    rng = np.random.default_rng([len(dtype), len(edge), 11])
    x = as_dtype(rng.normal(size=(40, 200, 3)), dtype)
    x[7, 100, 1] = 1e4 if dtype == "float32" else 1e300
    x[33, 90, 2] = np.nan
    bounds = [0, 50, 51, 130, 200]
    y, state = stream_op(x, 33, edge, bounds)
    y_numpy, state_numpy = stream_numpy(x, 33, edge, bounds)
    assert np.array_equal(y, y_numpy, equal_nan=True)
    assert np.array_equal(np.asarray(state.history), state_numpy.history, equal_nan=True)
    for rows in (slice(0, 1), slice(7, 8), slice(16, 32), slice(33, 40)):
        y_rows, state_rows = stream_op(x[rows], 33, edge, bounds)
        assert np.array_equal(y[rows], y_rows, equal_nan=True), rows
        assert np.array_equal(np.asarray(state.history)[rows], np.asarray(state_rows.history))
    assert violations(lanes(y), lanes(x), 33, edge, dtype) == []


@pytest.mark.parametrize("edge", EDGES)
def test_one_step_at_a_time_matches_the_definition(edge):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 60, 2)).astype(np.float32)
    y, state = stream_op(x, 8, edge, list(range(61)))
    np.testing.assert_allclose(y, reference_moving_avg(x, 8, 1, edge), rtol=1e-6, atol=1e-6)
    assert int(state.seen) == 60


@pytest.mark.parametrize("edge", EDGES)
def test_a_state_built_from_known_history_continues_it(edge):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 90, 3))
    for known in (0, 2, 30):  # shorter and longer than the window
        state = cma.stream_state(x[:, :known], window=9)
        y = cma.causal_moving_avg(x[:, known:], 9, edge=edge, initial_state=state).numpy()
        np.testing.assert_allclose(y, reference_moving_avg(x, 9, 1, edge)[:, known:], rtol=1e-13, atol=1e-15)
        numpy_state = cma.numpy_stream_state(x[:, :known], window=9)
        assert np.array_equal(np.asarray(state.history), numpy_state.history)
        assert int(state.seen) == int(numpy_state.seen) == known


def test_axis_other_than_the_steps_axis():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(50, 3, 2))
    state = None
    outputs = []
    for a, b in [(0, 7), (7, 8), (8, 50)]:
        y, state = cma.causal_moving_avg(x[a:b], 5, axis=0, initial_state=state, return_state=True)
        outputs.append(y.numpy())
    np.testing.assert_allclose(np.concatenate(outputs), reference_moving_avg(x, 5, 0), rtol=1e-13, atol=1e-15)
    assert state.history.shape == (4, 3, 2)


# --- NaN/Inf stay local across chunk cuts -------------------------------------------------------


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("offset", [-2, -1, 0, 1])
def test_a_nan_near_a_cut_reaches_exactly_the_windows_that_hold_it(edge, offset):
    window, cut = 6, 40
    x = np.ones((1, 100, 1), np.float32)
    x[0, cut + offset, 0] = np.nan
    x[0, 70, 0] = np.inf
    y, _ = stream_op(x, window, edge, [0, cut, cut + 1, 100])
    nan_steps = np.nonzero(np.isnan(y[0, :, 0]))[0].tolist()
    assert nan_steps == list(range(cut + offset, cut + offset + window))
    assert np.isinf(y[0, 70:76, 0]).all() and np.isfinite(y[0, 76:, 0]).all()
    assert (y[0, 76:, 0] == 1.0).all()


# --- Every path: the same bits ------------------------------------------------------------------


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_tf_function_and_xla_give_the_eager_bits(edge, dtype):
    rng = np.random.default_rng(7)
    x = as_dtype(rng.normal(size=(3, 120, 5)), dtype)
    bounds = [0, 1, 30, 31, 120]
    eager, eager_state = stream_op(x, 17, edge, bounds)
    for jit_compile in jit_compile_values():
        fn = tf.function(
            lambda chunk, state: cma.causal_moving_avg(
                chunk, 17, edge=edge, initial_state=state, return_state=True
            ),
            jit_compile=jit_compile,
        )
        state = cma.stream_state(x[:, :0], window=17)
        outputs = []
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            y, state = fn(tf.constant(x[:, a:b]), state)
            outputs.append(y.numpy())
        assert np.array_equal(np.concatenate(outputs, axis=1), eager, equal_nan=True), jit_compile
        assert np.array_equal(state.history.numpy(), eager_state.history.numpy())
        assert int(state.seen) == 120


@pytest.mark.parametrize("jit_compile", jit_compile_values())
def test_a_while_loop_step_loop_gives_the_eager_bits(jit_compile):
    rng = np.random.default_rng(8)
    x = tf.constant(rng.normal(size=(4, 50, 3)).astype(np.float32))

    @tf.function(jit_compile=jit_compile)
    def step_loop(xs):
        state = cma.stream_state(xs[:, :0], window=5)
        outputs = tf.TensorArray(tf.float32, size=50)

        def body(t, state, outputs):
            y, state = cma.causal_moving_avg(
                xs[:, t][:, None], 5, edge="partial", initial_state=state, return_state=True
            )
            return t + 1, state, outputs.write(t, y[:, 0])

        _, state, outputs = tf.while_loop(lambda t, *_: t < 50, body, (0, state, outputs))
        return tf.transpose(outputs.stack(), [1, 0, 2]), state

    y, state = step_loop(x)
    eager, _ = stream_op(x.numpy(), 5, "partial", list(range(51)))
    assert np.array_equal(y.numpy(), eager)
    assert int(state.seen) == 50


def test_a_state_can_live_in_variables_and_in_tf_nest():
    rng = np.random.default_rng(9)
    x = rng.normal(size=(2, 40, 3)).astype(np.float32)
    y0, state = cma.causal_moving_avg(x[:, :10], 4, return_state=True)
    held = cma.StreamState(*(tf.Variable(part) for part in state))
    flat = tf.nest.flatten(held)
    rebuilt = tf.nest.pack_sequence_as(state, flat)
    y1, state1 = cma.causal_moving_avg(x[:, 10:], 4, initial_state=rebuilt, return_state=True)
    held.history.assign(state1.history)
    held.seen.assign(state1.seen)
    np.testing.assert_allclose(
        np.concatenate([y0, y1], axis=1), reference_moving_avg(x, 4, 1), rtol=1e-6, atol=1e-6
    )
    assert int(held.seen.numpy()) == 40


def test_an_empty_chunk_passes_the_state_on():
    x = np.arange(12, dtype=np.float32).reshape(1, 12, 1)
    _, state = cma.causal_moving_avg(x, 4, return_state=True)
    y, after = cma.causal_moving_avg(x[:, :0], 4, initial_state=state, return_state=True)
    assert y.shape == (1, 0, 1)
    assert np.array_equal(after.history.numpy(), state.history.numpy()) and int(after.seen) == 12


def test_without_initial_state_the_outputs_are_those_of_a_plain_call():
    x = np.random.default_rng(10).normal(size=(2, 3000, 3)).astype(np.float32)
    y, _ = cma.causal_moving_avg(x, 300, return_state=True)
    assert np.array_equal(y.numpy(), cma.causal_moving_avg(x, 300).numpy())


def test_the_keras_layer_runs_over_a_stream():
    x = np.random.default_rng(11).normal(size=(2, 30, 3)).astype(np.float32)
    layer = cma.CausalMovingAverage(window=6, edge="partial")
    y0, state = layer(x[:, :11], return_state=True)
    y1, state = layer(x[:, 11:], initial_state=state, return_state=True)
    np.testing.assert_allclose(
        np.concatenate([y0, y1], axis=1), reference_moving_avg(x, 6, 1, "partial"), rtol=1e-6, atol=1e-6
    )
    assert int(state.seen) == 30


def test_no_gradient_flows_to_x_or_the_state():
    x = tf.Variable(np.ones((1, 10, 2), np.float32))
    history = tf.Variable(np.ones((1, 3, 2), np.float32))
    with tf.GradientTape(persistent=True) as tape:
        y, state = cma.causal_moving_avg(
            x, 4, initial_state=cma.StreamState(history, tf.constant(5, tf.int64)), return_state=True
        )
        loss = tf.reduce_sum(y) + tf.reduce_sum(state.history)
    assert tape.gradient(loss, x) is None and tape.gradient(loss, history) is None


# --- Bad input: a clear error naming the problem ------------------------------------------------


def test_a_state_from_another_batch_window_or_dtype_is_refused():
    x = np.zeros((4, 20, 3), np.float32)
    with pytest.raises(ValueError, match="batch or channel"):
        cma.causal_moving_avg(x, 5, initial_state=cma.stream_state(x[:2], window=5))
    with pytest.raises(ValueError, match="another window"):
        cma.causal_moving_avg(x, 6, initial_state=cma.stream_state(x, window=5))
    with pytest.raises(TypeError, match="another dtype"):
        cma.causal_moving_avg(x, 5, initial_state=cma.stream_state(x.astype(np.float64), window=5))
    with pytest.raises(TypeError, match="must be a StreamState"):
        cma.causal_moving_avg(x, 5, initial_state=np.zeros((4, 4, 3), np.float32))
    with pytest.raises(TypeError, match="int64 scalar"):
        cma.causal_moving_avg(x, 5, initial_state=cma.StreamState(np.zeros((4, 4, 3), np.float32), 1.5))
    with pytest.raises(TypeError, match="return_state must be a bool"):
        cma.causal_moving_avg(x, 5, return_state=1)
    with pytest.raises(ValueError, match="batch or channel"):
        cma.numpy_causal_moving_avg(x, 5, initial_state=cma.numpy_stream_state(x[:, :, :2], window=5))
    with pytest.raises(ValueError, match=">= 0"):
        cma.numpy_causal_moving_avg(x, 5, initial_state=cma.StreamState(np.zeros((4, 4, 3), np.float32), -1))


def test_shapes_known_only_at_run_time_are_checked_by_the_kernel():
    fn = tf.function(
        lambda x, history: cma.causal_moving_avg(
            x, 5, initial_state=cma.StreamState(history, tf.constant(0, tf.int64))
        ),
        input_signature=[tf.TensorSpec([None, None, 3]), tf.TensorSpec([None, None, 3])],
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="another window, batch or channel"):
        fn(tf.zeros((4, 20, 3)), tf.zeros((2, 4, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="step count must be >= 0"):
        cma.causal_moving_avg(
            np.zeros((1, 5, 1), np.float32),
            3,
            initial_state=cma.StreamState(np.zeros((1, 2, 1), np.float32), np.int64(-3)),
        )


def test_a_step_count_no_int64_holds_is_refused_not_wrapped():
    x = np.zeros((1, 5, 1), np.float32)
    history = np.zeros((1, 2, 1), np.float32)
    for call in (cma.causal_moving_avg, cma.numpy_causal_moving_avg):
        with pytest.raises(ValueError, match="step count must fit an int64"):
            call(x, 3, initial_state=cma.StreamState(history, np.uint64(2**63)))
        for seen in (2**64 - 1, 2**70):
            with pytest.raises(ValueError, match="step count must fit an int64"):
                call(x, 3, initial_state=cma.StreamState(history, seen))
    with pytest.raises(TypeError, match="int64 scalar, got uint64"):
        cma.causal_moving_avg(x, 3, initial_state=cma.StreamState(history, tf.constant(5, tf.uint64)))


@pytest.mark.parametrize("edge", EDGES)
def test_the_step_count_stops_at_the_int64_maximum(edge):
    # Only min(seen, W) divides, so a count held at the maximum changes no output.
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 6, 3)).astype(np.float32)
    history = rng.normal(size=(2, 3, 3)).astype(np.float32)
    whole = np.concatenate([history, x], axis=1).astype(np.float64)
    expected = reference_moving_avg(whole, 4, 1)[:, 3:]  # every window full: divided by W
    start = cma.StreamState(history, np.int64(2**63 - 3))
    xla = tf.function(
        lambda x, h, s: cma.causal_moving_avg(x, 4, edge=edge, initial_state=(h, s), return_state=True),
        jit_compile=True,
    )
    results = {
        "eager": cma.causal_moving_avg(x, 4, edge=edge, initial_state=start, return_state=True),
        "xla": xla(x, history, tf.constant(2**63 - 3, tf.int64)),
        "numpy": cma.numpy_causal_moving_avg(x, 4, edge=edge, initial_state=start, return_state=True),
    }
    for path, (y, state) in results.items():
        assert int(state.seen) == 2**63 - 1, path
        np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-6, atol=1e-6, err_msg=path)
        # Each path's state (tensors or arrays) continues in NumPy.
        again = cma.numpy_causal_moving_avg(x, 4, edge=edge, initial_state=state, return_state=True)
        assert int(again[1].seen) == 2**63 - 1, path


def test_a_state_too_large_to_exist_is_a_clear_error():
    x = np.zeros((64, 10, 8), np.float32)
    with pytest.raises(ValueError, match="too long for a stream"):
        cma.causal_moving_avg(x, 2**50, return_state=True)
    with pytest.raises(ValueError, match="too long for a stream"):
        cma.numpy_causal_moving_avg(x, 2**50, return_state=True)


# --- What existed before streams still loads and runs -------------------------------------------


def test_a_savedmodel_exported_before_streams_loads_and_runs():
    # Exported by the op without streams (CausalMovingAvg, no state): tests/data/README.md.
    loaded = tf.saved_model.load(os.fspath(DATA / "stateless_savedmodel"))
    x = np.random.default_rng(12).normal(size=(2, 25, 2)).astype(np.float32)
    y3 = loaded.signatures["zeros3"](x=tf.constant(x))
    y4 = loaded.signatures["partial4"](x=tf.constant(x))
    np.testing.assert_allclose(next(iter(y3.values())), reference_moving_avg(x, 3, 1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        next(iter(y4.values())), reference_moving_avg(x, 4, 1, "partial"), rtol=1e-6, atol=1e-6
    )
