"""The op is a constant to autodiff, like tf.stop_gradient: its gradient is None."""

import numpy as np
import tensorflow as tf

from causal_moving_avg import causal_moving_avg

X = np.random.RandomState(0).randn(2, 20, 3).astype(np.float32)


def test_eager_tape_gives_none_and_other_paths_still_count():
    x = tf.Variable(X)
    with tf.GradientTape(persistent=True) as tape:
        only_op = tf.reduce_sum(causal_moving_avg(x, window=3))
        mixed = tf.reduce_sum(causal_moving_avg(x, window=3) + 2.0 * x)
    assert tape.gradient(only_op, x) is None
    np.testing.assert_array_equal(tape.gradient(mixed, x).numpy(), np.full(X.shape, 2.0, np.float32))


def test_inside_tf_function():
    x = tf.Variable(X)

    @tf.function
    def grads():
        with tf.GradientTape(persistent=True) as tape:
            only_op = tf.reduce_sum(causal_moving_avg(x, window=5, edge="partial"))
            mixed = tf.reduce_sum(causal_moving_avg(x, window=5) * 3.0 + x * x)
        return tape.gradient(only_op, x), tape.gradient(mixed, x)

    only_op, mixed = grads()
    assert only_op is None
    np.testing.assert_allclose(mixed.numpy(), 2 * X, rtol=1e-6)


def test_v1_gradients_in_a_graph():
    with tf.Graph().as_default():
        x = tf.constant(X)
        y = causal_moving_avg(x, window=3)
        assert tf.compat.v1.gradients(tf.reduce_sum(y), x) == [None]
        (mixed,) = tf.compat.v1.gradients(tf.reduce_sum(y + 4.0 * x), x)
        with tf.compat.v1.Session() as session:
            np.testing.assert_array_equal(session.run(mixed), np.full(X.shape, 4.0, np.float32))
