"""How users compute a causal moving average today, and the same with the op.

The original code computed a window-3 causal moving average of each series with a frozen Keras
Conv1D, building a model and calling `predict` inside a loop over series of changing length: a
model build and a `predict` per call, `tf.function` retracing warnings, and (under Keras 3) a
`tf.stop_gradient` on a Keras tensor that no longer runs. With the op it is one call, no model,
no retracing, and a constant to autodiff by itself (no stop_gradient needed).

    python examples/conv1d_loop_rewritten.py
"""

import numpy as np
import tensorflow as tf

from causal_moving_avg import causal_moving_avg


def slide2(y):
    """Drop-in for the original slide2: a [length] series in, a [length, 1] moving average out."""
    return tf.reshape(causal_moving_avg(tf.reshape(y, [-1]), window=3), [-1, 1])


def main():
    rng = np.random.default_rng(0)
    for step in range(20):  # series of changing length, as in the original loop
        series = tf.constant(rng.standard_normal(int(rng.integers(5, 500))), tf.float32)
        result = slide2(series)
        print(f"step {step:2d}: length {series.shape[0]:3d}, last average {float(result[-1, 0]):+.6f}")


if __name__ == "__main__":
    main()
