"""CausalMovingAvg computes the causal moving average, checked against independent references."""

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

from causal_moving_avg import causal_moving_avg
from conftest import RTOL, keras_conv1d_moving_avg, reference_moving_avg

EDGES = ["zeros", "partial"]


def assert_matches_reference(x, window, axis, edge, rtol):
    y = causal_moving_avg(x, window=window, axis=axis, edge=edge)
    assert y.shape == x.shape and y.dtype == tf.as_dtype(x.dtype)
    expected = reference_moving_avg(x, window, axis, edge)
    # The error bound scales with the window's magnitude, not its mean (sums may cancel).
    scale = reference_moving_avg(np.abs(x), window, axis, edge)
    error = np.abs(y.numpy().astype(np.float64) - expected)
    assert np.all(error <= rtol * scale), f"max error {error.max()}"


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("window", [1, 2, 3, 7, 64, 5000])
@pytest.mark.parametrize(
    "shape,axis",
    [
        ((1000,), 0),
        ((1000,), -1),
        ((3, 1200), 1),
        ((1200, 3), 0),
        ((4, 1100, 5), 1),
        ((4, 1100, 5), -2),
        ((2, 3, 1050, 2), 2),
        ((1030, 2, 3, 2), 0),
        ((2, 3, 2, 1040), -1),
        ((2, 3, 1040, 300), 2),
    ],
)
def test_float64_matches_definition(shape, axis, window, edge):
    x = np.random.randn(*shape)
    assert_matches_reference(x, window, axis, edge, RTOL[np.float64])


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("length", [0, 1, 2, 3, 1500])
@pytest.mark.parametrize("window", [1, 3, 64])
def test_lengths_including_empty_and_shorter_than_window(length, window, edge):
    x = np.random.randn(2, length, 3)
    assert_matches_reference(x, window, 1, edge, RTOL[np.float64])


@pytest.mark.parametrize("shape,axis", [((0, 5, 3), 1), ((2, 0, 3), 1), ((2, 5, 0), 1), ((0,), 0)])
def test_empty_tensors_keep_shape(shape, axis):
    y = causal_moving_avg(np.zeros(shape, np.float32), window=3, axis=axis)
    assert y.shape == shape


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("dtype", [np.float16, "bfloat16", np.float32, np.float64])
@pytest.mark.parametrize("window", [1, 3, 100])
def test_every_dtype_within_its_rounding(dtype, window, edge):
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    x = (np.random.randn(3, 2000, 4) * 10).astype(np_dtype)
    tensor = tf.constant(x, dtype=tf.bfloat16) if dtype == "bfloat16" else x
    y = causal_moving_avg(tensor, window=window, edge=edge)
    assert y.dtype == tf.as_dtype(np_dtype)
    expected = reference_moving_avg(x.astype(np.float64), window, 1, edge)
    scale = reference_moving_avg(np.abs(x.astype(np.float64)), window, 1, edge)
    error = np.abs(y.numpy().astype(np.float64) - expected)
    # One rounding of the result to the dtype (relative to the window's magnitude).
    assert np.all(error <= RTOL[dtype] * scale + ml_dtypes.finfo(np_dtype).tiny)


@pytest.mark.parametrize("window", [1, 2, 3, 7, 64])
@pytest.mark.parametrize("channels", [1, 3])
def test_equals_frozen_keras_conv1d(window, channels):
    x = np.random.randn(2, 700, channels).astype(np.float32)
    y = causal_moving_avg(x, window=window)
    np.testing.assert_allclose(y.numpy(), keras_conv1d_moving_avg(x, window), rtol=2e-6, atol=2e-6)


def test_seed_function_gives_the_same_result_in_one_call():
    """The user's original slide2 (../shared/seed/), minus the tf.stop_gradient on a Keras tensor
    that Keras 3 rejects, against one call of the op."""
    import keras
    from keras.layers import Conv1D

    def slide2(y):
        length = y.shape[0]
        y = tf.reshape(y, [1, -1, 1])
        inputs = keras.Input(shape=(length, 1))
        output = Conv1D(
            filters=1, kernel_size=3, padding="causal", activation="linear", trainable=False, use_bias=False
        )(inputs)
        model = keras.Model(inputs=inputs, outputs=output)
        weights_list = model.get_weights()
        weights_list[0] = (np.ones(3) / 3).reshape((3, 1, 1))
        model.set_weights(weights_list)
        result = model.predict(y, verbose=0)
        return tf.reshape(result, [-1, 1])

    series = tf.constant(np.random.randn(257).astype(np.float32))
    expected = slide2(series)
    ours = tf.reshape(causal_moving_avg(series, window=3), [-1, 1])
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("window", [1, 3, 40])
def test_nan_and_inf_reach_only_the_windows_that_hold_them(window, edge):
    x = np.random.randn(3, 5000, 2)
    x[0, 10, 0] = np.inf
    x[0, 4000, 0] = -np.inf
    x[1, 2000, 1] = np.nan
    x[2, 100, 0] = np.inf
    x[2, 100 + window // 2, 0] = -np.inf  # +inf meets -inf inside one window: NaN there only
    y = causal_moving_avg(x, window=window, edge=edge).numpy()
    expected = reference_moving_avg(x, window, 1, edge)
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)  # non-finite must match exactly
    assert np.isfinite(y).sum() == np.isfinite(expected).sum()
    assert np.isfinite(y[0, 10 + window :, 0][: 4000 - 10 - window]).all()


def test_window_far_longer_than_the_sequence():
    x = np.random.randn(4, 50, 2)
    for edge in EDGES:
        y = causal_moving_avg(x, window=2**40, edge=edge).numpy()
        expected = np.cumsum(x, axis=1) / (2**40 if edge == "zeros" else np.arange(1, 51)[None, :, None])
        np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-300)


def test_accepts_lists_arrays_and_tensors_and_default_axis():
    data = [[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]]
    expected = reference_moving_avg(np.array(data), 2, 1)
    for x in (data, np.array(data), tf.constant(data)):
        np.testing.assert_allclose(causal_moving_avg(x, window=2).numpy(), expected, rtol=1e-6)
    assert causal_moving_avg([1, 2, 3], window=2).dtype == tf.float32  # ints in a list: float32
    np.testing.assert_allclose(causal_moving_avg([1.0, 2.0, 3.0], window=2).numpy(), [0.5, 1.5, 2.5])


def test_shape_inference_keeps_unknown_dims_inside_tf_function():
    @tf.function(input_signature=[tf.TensorSpec([None, None, 3], tf.float32)])
    def known_rank(x):
        y = causal_moving_avg(x, window=4)
        assert y.shape.as_list() == [None, None, 3]
        return y

    @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
    def unknown_rank(x):
        y = causal_moving_avg(x, window=4, axis=-1)
        assert y.shape.rank is None
        return y

    x = np.random.randn(2, 30, 3).astype(np.float32)
    np.testing.assert_allclose(known_rank(x).numpy(), reference_moving_avg(x, 4, 1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(unknown_rank(x).numpy(), reference_moving_avg(x, 4, 2), rtol=1e-6, atol=1e-6)
