"""CausalMovingAvg computes the causal moving average, checked against independent references."""

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

from causal_moving_avg import causal_moving_avg, numpy_causal_moving_avg
from conftest import EDGES, keras_conv1d_moving_avg, reference_by_prefix_sums, reference_moving_avg, rtol


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
    assert_matches_reference(x, window, axis, edge, rtol(np.float64))


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("length", [0, 1, 2, 3, 1500])
@pytest.mark.parametrize("window", [1, 3, 64])
def test_lengths_including_empty_and_shorter_than_window(length, window, edge):
    x = np.random.randn(2, length, 3)
    assert_matches_reference(x, window, 1, edge, rtol(np.float64))


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
    assert np.all(error <= rtol(dtype) * scale + ml_dtypes.finfo(np_dtype).tiny)


def rounded_once(values, dtype):
    """float64 values rounded once to float16 or bfloat16 (to nearest, ties to even), plainly."""
    if dtype == "bfloat16":  # 8 significant bits; frexp's mantissa lies in [0.5, 1)
        mantissa, exponent = np.frexp(values)
        return np.ldexp(np.round(mantissa * 2**8) / 2**8, exponent).astype(ml_dtypes.bfloat16)
    return values.astype(np.float16)  # NumPy rounds float64 to float16 directly


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_16_bit_outputs_are_rounded_once(dtype):
    # Long windows make many exact means fall close to a midpoint between two 16-bit neighbours,
    # where rounding through float32 first goes the wrong way.
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    x = (np.random.default_rng(0).integers(-1000, 1000, size=(1, 1_000_000, 1)) / 8).astype(np_dtype)
    exact = reference_by_prefix_sums(x.astype(np.float64), 1_000_000, 1, "partial")  # long double sums
    # Only a mean within float64's own rounding of a midpoint may go either way.
    low, high = rounded_once(exact * (1 - 2e-15), dtype), rounded_once(exact * (1 + 2e-15), dtype)
    tensor = tf.constant(x, tf.as_dtype(np_dtype))
    outputs = [causal_moving_avg(tensor, 1_000_000, axis=1, edge="partial").numpy()]
    if dtype == np.float16:
        outputs.append(numpy_causal_moving_avg(x, 1_000_000, axis=1, edge="partial"))
    for y in outputs:
        wrong = (y != low) & (y != high)
        assert not wrong.any(), f"{wrong.sum()} outputs, e.g. step {np.argmax(wrong)}"


@pytest.mark.parametrize("window", [1, 2, 3, 7, 64])
@pytest.mark.parametrize("channels", [1, 3])
def test_equals_frozen_keras_conv1d(window, channels):
    x = np.random.randn(2, 700, channels).astype(np.float32)
    y = causal_moving_avg(x, window=window)
    np.testing.assert_allclose(y.numpy(), keras_conv1d_moving_avg(x, window), rtol=2e-6, atol=2e-6)


def test_the_per_call_model_function_gives_the_same_result_in_one_call():
    """The user's original slide2 (a frozen Conv1D model built and predicted per call), minus the
    tf.stop_gradient on a Keras tensor that Keras 3 rejects, against one call of the op."""
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


@pytest.mark.parametrize("window", [1, 2, 3, 100])
def test_float64_near_the_largest_double_gives_finite_means(window):
    # Window sums of these inputs overflow double; their means do not. Past the large values the
    # output must be the ones' mean again, not an Inf carried to the end of a span. (Sums of the
    # large values are exact here; where they round, the ones' mean may lose up to the running
    # sum's share of the bound in README's Numerics.)
    x = np.ones((2, 70000, 3))
    x[0, :2, 0] = 1e308
    x[0, 5000:5002, 1] = 2.0**1023
    x[1, 40000:40003, 2] = -1.5 * 2.0**1023
    # Reference: the definition in float64 after exact power-of-two scaling, so no sum overflows.
    for edge in EDGES:
        expected = reference_moving_avg(x * 2.0**-64, window, 1, edge) * 2.0**64
        y = causal_moving_avg(x, window=window, edge=edge).numpy()
        assert np.isfinite(y).all()
        np.testing.assert_allclose(y, expected, rtol=1e-15)
        assert np.array_equal(numpy_causal_moving_avg(x, window, 1, edge), y)


@pytest.mark.parametrize(
    "x,window,expected",
    [  # tiny float64 values beside NaN/Inf keep every bit (no sum scaled into subnormals)
        ([1.30953547e-300, np.inf], 1, [1.30953547e-300, np.inf]),
        ([1e-300, 3e-300, np.nan, 2e-300], 2, [1e-300 / 2, (1e-300 + 3e-300) / 2, np.nan, np.nan]),
        ([2e-300, -np.inf, 3e-300, 5e-300], 1, [2e-300, -np.inf, 3e-300, 5e-300]),
    ],
)
def test_tiny_float64_values_beside_nan_and_inf_keep_their_bits(x, window, expected):
    x = np.array(x)
    # Also with many rows: a tiny row beside rows that meet NaN/Inf.
    rows = np.stack([x, np.nan_to_num(x, posinf=1.0, neginf=1.0, nan=1.0)])
    for edge in EDGES:
        want = reference_moving_avg(x, window, 0, edge)
        np.testing.assert_array_equal(causal_moving_avg(x, window, axis=0, edge=edge).numpy(), want)
        np.testing.assert_array_equal(numpy_causal_moving_avg(x, window, 0, edge), want)
        np.testing.assert_array_equal(causal_moving_avg(rows, window, axis=1, edge=edge).numpy()[0], want)
    np.testing.assert_array_equal(causal_moving_avg(x, window, axis=0).numpy(), expected)


def test_tiny_float64_values_after_an_overflowing_window_keep_their_bits():
    # The windows holding the huge pair overflow float64 sums; the later windows hold only tiny
    # values again, and their means must be those of the tiny values alone.
    x = np.full(5000, 3e-300)
    x[1000:1002] = 1.5e308
    for window in (2, 40):
        y = causal_moving_avg(x, window, axis=0).numpy()
        assert np.isfinite(y).all()
        np.testing.assert_allclose(y[1002 + window :], 3e-300, rtol=1e-15, atol=0)
        np.testing.assert_array_equal(numpy_causal_moving_avg(x, window, 0), y)


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


def test_typed_array_likes_keep_their_dtype():
    pandas = pytest.importorskip("pandas")
    assert causal_moving_avg(pandas.Series([1.0, 2.0, 3.0]), window=2).dtype == tf.float64
    assert causal_moving_avg(memoryview(np.arange(3.0)), window=2).dtype == tf.float64
    y = causal_moving_avg(pandas.DataFrame({"a": [1.0, 2.0, 3.0]}, dtype=np.float32), window=2, axis=0)
    np.testing.assert_array_equal(y.numpy(), [[0.5], [1.5], [2.5]])
    with pytest.raises(TypeError, match="got int64"):  # like an integer array: no silent cast
        causal_moving_avg(pandas.Series([1, 2, 3]), window=2)


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
