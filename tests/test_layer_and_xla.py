"""The Keras layer, and the op inside XLA-compiled functions and models."""

import subprocess
import sys

import keras
import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

import causal_moving_avg as cma
from conftest import keras_conv1d_moving_avg, reference_moving_avg

X = np.random.RandomState(0).randn(4, 64, 3).astype(np.float32)


def small_model(window=3, edge="zeros"):
    inputs = keras.Input((64, 3))
    smoothed = cma.CausalMovingAverage(window=window, edge=edge)(inputs)
    outputs = keras.layers.Dense(1)(keras.layers.Flatten()(smoothed))
    return keras.Model(inputs, outputs)


def test_layer_equals_frozen_conv1d_in_sequential_and_functional_models():
    expected = keras_conv1d_moving_avg(X, 5)
    sequential = keras.Sequential([keras.Input((64, 3)), cma.CausalMovingAverage(window=5)])
    inputs = keras.Input((None, 3))
    functional = keras.Model(inputs, cma.CausalMovingAverage(window=5)(inputs))
    for model in (sequential, functional):
        np.testing.assert_allclose(model.predict(X, verbose=0), expected, rtol=2e-6, atol=2e-6)
        assert model.weights == []


def test_layer_config_and_output_shape():
    layer = cma.CausalMovingAverage(window=7, axis=-1, edge="partial", name="smooth")
    assert layer.compute_output_shape((None, 10, 3)) == (None, 10, 3)
    config = layer.get_config()
    assert {k: config[k] for k in ("window", "axis", "edge", "name")} == {
        "window": 7,
        "axis": -1,
        "edge": "partial",
        "name": "smooth",
    }
    clone = cma.CausalMovingAverage.from_config(config)
    np.testing.assert_array_equal(clone(X).numpy(), layer(X).numpy())


def test_layer_axis_none_is_the_steps_axis_of_each_input():
    layer = cma.CausalMovingAverage(window=3, axis=None)
    np.testing.assert_array_equal(layer(X).numpy(), cma.causal_moving_avg(X, 3, axis=1).numpy())
    assert cma.CausalMovingAverage.from_config(layer.get_config()).axis is None


@pytest.mark.parametrize(
    "kwargs,error",
    [
        ({"window": 0}, ValueError),
        ({"edge": "x"}, ValueError),
        ({"axis": 1.5}, TypeError),
        ({"window": "3"}, TypeError),
    ],
)
def test_layer_rejects_bad_arguments(kwargs, error):
    with pytest.raises(error):
        cma.CausalMovingAverage(**kwargs)


def test_layer_rejects_an_axis_the_input_lacks():
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        keras.Sequential([keras.Input((64, 3)), cma.CausalMovingAverage(axis=3)])


@pytest.mark.parametrize("jit_compile", [False, True])
def test_fit_predict_evaluate(jit_compile):
    keras.utils.set_random_seed(0)
    model = small_model()
    model.compile(optimizer="sgd", loss="mse", jit_compile=jit_compile)
    targets = np.random.RandomState(1).randn(4, 1).astype(np.float32)
    history = model.fit(X, targets, epochs=3, batch_size=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert np.isfinite(model.evaluate(X, targets, verbose=0))
    dense = model.layers[-1]
    smoothed = keras_conv1d_moving_avg(X, 3).reshape(4, -1)
    kernel, bias = (w.numpy() for w in dense.weights)
    np.testing.assert_allclose(model.predict(X, verbose=0), smoothed @ kernel + bias, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("policy,dtype", [("mixed_float16", "float16"), ("mixed_bfloat16", "bfloat16")])
def test_mixed_precision_computes_in_the_compute_dtype(policy, dtype):
    keras.mixed_precision.set_global_policy(policy)
    try:
        layer = cma.CausalMovingAverage(window=4)
        y = layer(X)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert y.dtype == dtype
    rtol = 1e-3 if dtype == "float16" else 8e-3
    x_rounded = tf.cast(tf.cast(X, dtype), tf.float64).numpy()
    expected = reference_moving_avg(x_rounded, 4, 1)
    scale = reference_moving_avg(np.abs(x_rounded), 4, 1)
    assert np.all(np.abs(tf.cast(y, tf.float64).numpy() - expected) <= rtol * scale)


SAVE_AND_LOAD = """
import sys, numpy as np
import causal_moving_avg, keras
model = keras.models.load_model(sys.argv[1])
np.save(sys.argv[2], model.predict(np.load(sys.argv[3]), verbose=0))
"""


def test_keras_file_loads_in_a_fresh_process_without_custom_objects(tmp_path):
    model = small_model(window=6, edge="partial")
    path = tmp_path / "model.keras"
    model.save(path)
    np.save(tmp_path / "x.npy", X)
    subprocess.run(
        [sys.executable, "-c", SAVE_AND_LOAD, str(path), str(tmp_path / "y.npy"), str(tmp_path / "x.npy")],
        check=True,
        capture_output=True,
    )
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), model.predict(X, verbose=0))


# --- XLA ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16, tf.float32, tf.float64])
@pytest.mark.parametrize("edge", ["zeros", "partial"])
def test_xla_path_matches_reference_with_non_finite_values(dtype, edge):
    rtol = {tf.float16: 1e-3, tf.bfloat16: 8e-3, tf.float32: 2e-7, tf.float64: 1e-12}[dtype]
    atol = float(ml_dtypes.finfo(dtype.as_numpy_dtype).smallest_subnormal)  # for subnormal results
    cases = [((500,), 0, 3), ((3, 300, 4), 1, 64), ((3, 300, 4), -1, 1), ((40, 2, 3), 0, 10**6)]
    for shape, axis, window in cases:
        x = np.random.randn(*shape) * 10
        x.flat[7::97] = np.inf
        x.flat[50::211] = -np.inf
        x.flat[11::301] = np.nan
        x_typed = tf.constant(x, dtype)
        compiled = tf.function(
            lambda t, w=window, a=axis: cma.causal_moving_avg(t, w, a, edge), jit_compile=True
        )
        y = tf.cast(compiled(x_typed), tf.float64).numpy()
        quantized = tf.cast(x_typed, tf.float64).numpy()
        expected = reference_moving_avg(quantized, window, axis, edge)
        scale = reference_moving_avg(np.abs(quantized), window, axis, edge)
        finite = np.isfinite(expected)
        np.testing.assert_array_equal(y[~finite], expected[~finite])
        assert np.all(np.abs(y[finite] - expected[finite]) <= rtol * scale[finite] + atol), (shape, window)


@pytest.mark.parametrize("window", [2, 33, 1000])
def test_xla_path_confines_huge_values_to_their_windows(window):
    # A difference of prefix sums would lose the ones after a 1e30 (float32) for good, and overflow
    # on float64 values near the largest double; sums of the window's own values do neither.
    for dtype, huge, rtol in [(np.float32, 1e30, 2e-7), (np.float64, 1.5e308, 1e-14)]:
        x = np.ones((2, 5000), dtype)
        x[0, 10:13] = huge
        x[1, 100] = -huge
        compiled = tf.function(lambda t, w=window: cma.causal_moving_avg(t, w, axis=1), jit_compile=True)
        y = compiled(tf.constant(x)).numpy()
        # The definition in float64 after exact power-of-two scaling, so no reference sum overflows.
        expected = reference_moving_avg(x.astype(np.float64) * 2.0**-64, window, 1) * 2.0**64
        assert np.isfinite(y).all()
        np.testing.assert_allclose(y, expected, rtol=rtol)


def test_xla_path_keeps_tiny_float64_values():
    # Not flushed to zero, as scaling every sum down by 2^-64 would under XLA on CPU.
    x = np.array([[1e-300] * 3, [3e-289, 0.0, 0.0], [2.0**-957 * (1 + 2.0**-52), -(2.0**-957), 0.0]])
    compiled = tf.function(lambda t: cma.causal_moving_avg(t, 3, axis=1), jit_compile=True)
    np.testing.assert_allclose(compiled(x).numpy(), reference_moving_avg(x, 3, 1), rtol=1e-15, atol=0)


@pytest.mark.parametrize(
    "dtype,inputs,mean",
    [  # means just above the midpoint between 1 and the next 16-bit value
        (tf.float16, [2.0, 2.0, 2.0**-9, 2.0**-24], 1 + 2.0**-10),
        (tf.bfloat16, [2.0, 2.0, 2.0**-6, 2.0**-28], 1 + 2.0**-7),
    ],
)
def test_xla_path_rounds_16_bit_outputs_once(dtype, inputs, mean):
    compiled = tf.function(lambda t: cma.causal_moving_avg(t, 4, axis=1), jit_compile=True)
    y = compiled(tf.constant([inputs], dtype))
    assert float(y[0, 3]) == mean  # rounding through float32 first would give 1.0


def test_xla_path_with_steps_unknown_while_tracing():
    compiled = tf.function(
        lambda t: cma.causal_moving_avg(t, 2**40, axis=1, edge="partial"),
        jit_compile=True,
        input_signature=[tf.TensorSpec([None, None], tf.float64)],
    )
    x = np.random.randn(3, 300)
    np.testing.assert_allclose(compiled(x).numpy(), reference_moving_avg(x, 2**40, 1, "partial"), rtol=1e-12)


def test_xla_path_replaces_the_custom_op_only_under_xla():
    def f(t):
        return cma.causal_moving_avg(t, window=3)

    spec = tf.TensorSpec([2, 50, 3], tf.float32)
    plain = tf.function(f).get_concrete_function(spec).graph.get_operations()
    xla = tf.function(f, jit_compile=True).get_concrete_function(spec).graph.get_operations()
    assert any(op.type == "CausalMovingAvg" for op in plain)
    assert not any(op.type == "CausalMovingAvg" for op in xla)


def test_xla_path_is_a_constant_to_autodiff():
    x = tf.Variable(X)

    @tf.function(jit_compile=True)
    def grads():
        with tf.GradientTape(persistent=True) as tape:
            only_op = tf.reduce_sum(cma.causal_moving_avg(x, window=3))
            mixed = tf.reduce_sum(cma.causal_moving_avg(x, window=3) + 2.0 * x)
        return tape.gradient(only_op, x, unconnected_gradients="zero"), tape.gradient(mixed, x)

    only_op, mixed = grads()
    np.testing.assert_array_equal(only_op.numpy(), np.zeros_like(X))
    np.testing.assert_array_equal(mixed.numpy(), np.full_like(X, 2.0))
