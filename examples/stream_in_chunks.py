"""A series that arrives in pieces, averaged as it arrives: the state carries the window across
calls, so each piece costs only its own length (plus W), never the whole history.

The user's original loop re-ran a frozen Conv1D on the whole growing prefix for every new sample
and kept the last output; here each new sample (or chunk) is one call that continues the stream.

    python examples/stream_in_chunks.py
"""

import numpy as np
import tensorflow as tf

import causal_moving_avg as cma


def average_in_chunks(series, window, chunk_lengths, edge="zeros"):
    """The causal moving average of a [batch, steps, channels] series fed in chunks of the given
    lengths, each call continuing the previous one's state."""
    outputs, state, start = [], None, 0
    for length in chunk_lengths:
        chunk = series[:, start : start + length]
        y, state = cma.causal_moving_avg(chunk, window, edge=edge, initial_state=state, return_state=True)
        outputs.append(y)
        start += length
    return tf.concat(outputs, axis=1), state


@tf.function
def one_sample_at_a_time(series, window):
    """The growing-series loop as a graph: one step per iteration, the state a loop variable."""
    steps = tf.shape(series)[1]
    state = cma.stream_state(series[:, :0], window=window)
    averages = tf.TensorArray(series.dtype, size=steps)

    def body(t, state, averages):
        y, state = cma.causal_moving_avg(
            series[:, t][:, None], window, initial_state=state, return_state=True
        )
        return t + 1, state, averages.write(t, y[:, 0])

    _, state, averages = tf.while_loop(lambda t, *_: t < steps, body, (0, state, averages))
    return tf.transpose(averages.stack(), [1, 0, 2]), state


def main():
    rng = np.random.default_rng(0)
    series = tf.constant(rng.standard_normal((2, 1000, 3)), tf.float32)
    whole = cma.causal_moving_avg(series, window=24)
    chunked, state = average_in_chunks(series, 24, [1, 5, 300, 0, 194, 500])
    stepped, _ = one_sample_at_a_time(series, 24)
    print("chunks vs one call, largest difference:", float(tf.reduce_max(tf.abs(chunked - whole))))
    print(
        "one sample per step vs one call, largest difference:", float(tf.reduce_max(tf.abs(stepped - whole)))
    )
    print("state:", state.history.shape, "history,", int(state.seen), "steps seen")


if __name__ == "__main__":
    main()
