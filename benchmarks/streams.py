"""The benchmark's stream rows: the op continuing a stream against the same op without a state,
a step-by-step loop against the cheapest TF op doing the same number of calls, and the user's
original loop (a frozen Conv1D on the growing prefix, one step per call) against the op with a
state. Every ratio is of two medians measured in the same run."""

import numpy as np
import tensorflow as tf

import causal_moving_avg as cma
from timing import time_call, time_pair


def _row(name, shape, window, median, peer_name, peer_median, calls):
    print(f"  {name:58s} {median * 1e3:10.3f} ms  {median / peer_median:6.2f} x {peer_name}", flush=True)
    return {
        "case": name,
        "shape": list(shape),
        "window": window,
        "median_ms": median * 1e3,
        "peer": peer_name,
        "peer_median_ms": peer_median * 1e3,
        "ratio": median / peer_median,
        "calls": calls,
    }


def chunked_rows(shapes, windows, repeats, min_seconds):
    """One chunk of a stream (a state holding W - 1 earlier inputs) against the same call without
    a state, eager."""
    rows = []
    for shape in shapes:
        x = tf.constant(np.random.default_rng(1).standard_normal(shape, np.float32))
        for window in windows:
            state = cma.stream_state(x, window=window)  # as if x had been seen once already
            chunk = lambda x=x, w=window, s=state: cma.causal_moving_avg(x, w, initial_state=s)  # noqa: E731
            plain = lambda x=x, w=window: cma.causal_moving_avg(x, w)  # noqa: E731
            with_state, without, count = time_pair(chunk, plain, repeats, min_seconds)
            rows.append(
                _row(
                    "chunk with a state", shape, window, with_state, "the op without a state", without, count
                )
            )
    return rows


def step_loop_rows(steps, repeats, min_seconds):
    """One step [64, 1, 8] with a state (W = 32): eagerly per call, and a tf.while_loop of
    `steps` steps in a tf.function, each against tf.add doing the same."""
    rng = np.random.default_rng(2)
    x = tf.constant(rng.standard_normal((64, 1, 8), np.float32))
    other = tf.constant(rng.standard_normal((64, 1, 8), np.float32))
    _, state = cma.causal_moving_avg(
        tf.constant(rng.standard_normal((64, 100, 8), np.float32)), 32, return_state=True
    )
    rows = []
    one, count = time_call(
        lambda: cma.causal_moving_avg(x, 32, initial_state=state, return_state=True)[0], repeats, min_seconds
    )
    add, _ = time_call(lambda: tf.add(x, other), repeats, min_seconds)
    rows.append(
        _row("one eager step [64, 1, 8] with a state", (64, 1, 8), 32, one, "eager tf.add", add, count)
    )

    series = tf.constant(rng.standard_normal((64, steps, 8), np.float32))

    @tf.function
    def stream_loop(series, state):
        def body(t, state, total):
            y, state = cma.causal_moving_avg(
                series[:, t][:, None], 32, initial_state=state, return_state=True
            )
            return t + 1, state, total + y

        return tf.while_loop(lambda t, *_: t < steps, body, (0, state, tf.zeros((64, 1, 8))))[2]

    @tf.function
    def add_loop(series):
        def body(t, total):
            return t + 1, tf.add(total, series[:, t][:, None])

        return tf.while_loop(lambda t, *_: t < steps, body, (0, tf.zeros((64, 1, 8))))[1]

    loop, count = time_call(lambda: stream_loop(series, state), max(3, repeats // 3), min_seconds)
    adds, _ = time_call(lambda: add_loop(series), max(3, repeats // 3), min_seconds)
    rows.append(
        _row(
            f"tf.while_loop of {steps} steps with a state",
            (64, steps, 8),
            32,
            loop,
            "the same loop of tf.add",
            adds,
            count,
        )
    )
    return rows


def seed_loop_rows(steps):
    """The user's original loop: a frozen causal Conv1D (weights 1/3) called on the growing
    prefix of a series, keeping the last output, against the op with a state, one step per
    call; both eager, one series of `steps` samples, timed once each."""
    import time

    import keras

    series = np.random.default_rng(3).standard_normal(steps).astype(np.float32)
    inputs = keras.Input(shape=(None, 1))
    conv = keras.layers.Conv1D(1, 3, padding="causal", use_bias=False, trainable=False)
    model = keras.Model(inputs, conv(inputs))
    model.set_weights([np.full((3, 1, 1), 1 / 3, np.float32)])
    y = tf.reshape(tf.constant(series), [1, -1, 1])

    begin = time.perf_counter()
    original = np.zeros(steps, np.float32)
    for i in range(steps):
        original[i] = model(y[:, : i + 1, :])[0, -1, 0]
    original_time = time.perf_counter() - begin

    begin = time.perf_counter()
    ours = np.zeros(steps, np.float32)
    state = None
    for i in range(steps):
        out, state = cma.causal_moving_avg(y[:, i : i + 1, :], 3, initial_state=state, return_state=True)
        ours[i] = out[0, 0, 0]
    ours_time = time.perf_counter() - begin
    np.testing.assert_allclose(ours, original, rtol=1e-5, atol=1e-6)  # the same series of averages
    return [
        _row(
            f"seed loop, {steps} steps, one step per call (op + state)",
            (1, steps, 1),
            3,
            ours_time,
            "Conv1D on the growing prefix",
            original_time,
            1,
        )
    ]


def stream_rows(quick, repeats, min_seconds):
    shapes = [(8, 4096, 8), (1, 100_000, 1)] if quick else [(64, 16384, 8), (1, 10_000_000, 1)]
    steps = 100 if quick else 1000
    rows = chunked_rows(shapes, [3, 1024], repeats, min_seconds)
    rows += step_loop_rows(steps, repeats, min_seconds)
    rows += seed_loop_rows(steps)
    return rows


def markdown_table(rows):
    lines = ["| case | shape | W | median ms | peer | peer ms | ratio |", "|---|---|---:|---:|---|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['shape']} | {r['window']} | {r['median_ms']:.3f} | {r['peer']} "
            f"| {r['peer_median_ms']:.3f} | {r['ratio']:.2f} |"
        )
    return "\n".join(lines)
