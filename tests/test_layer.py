"""The Keras layer: a drop-in for the frozen causal Conv1D, in eager, compiled and XLA models."""

import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import causal_moving_avg as cma
from conftest import jit_compile_values, keras_conv1d_moving_avg, reference_moving_avg, rtol

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


@pytest.mark.parametrize("jit_compile", jit_compile_values())
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


@pytest.mark.parametrize("jit_compile", jit_compile_values()[1:])
@pytest.mark.parametrize("edge", ["zeros", "partial"])
def test_jit_compiled_model_gives_the_eager_ops_bits(edge, jit_compile):
    """Under Keras's jit_compile=True the layer runs the op's own kernel inside XLA."""
    inputs = keras.Input((None, 3))
    model = keras.Model(inputs, cma.CausalMovingAverage(window=7, edge=edge)(inputs))
    model.compile(jit_compile=jit_compile)
    x = np.random.RandomState(2).randn(8, 500, 3).astype(np.float32)
    x[3, 40, 1] = np.nan
    eager = cma.causal_moving_avg(x, 7, axis=1, edge=edge).numpy()
    np.testing.assert_array_equal(model.predict(x, batch_size=4, verbose=0), eager)


@pytest.mark.parametrize("jit_compile", jit_compile_values())
@pytest.mark.parametrize("policy,dtype", [("mixed_float16", "float16"), ("mixed_bfloat16", "bfloat16")])
def test_mixed_precision_computes_in_the_compute_dtype(policy, dtype, jit_compile):
    keras.mixed_precision.set_global_policy(policy)
    try:
        inputs = keras.Input((64, 3))
        model = keras.Model(inputs, cma.CausalMovingAverage(window=4)(inputs))
        model.compile(jit_compile=jit_compile)
        y = model.predict(X, verbose=0)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert y.dtype == dtype
    x_rounded = tf.cast(tf.cast(X, dtype), tf.float64).numpy()
    expected = reference_moving_avg(x_rounded, 4, 1)
    scale = reference_moving_avg(np.abs(x_rounded), 4, 1)
    assert np.all(np.abs(y.astype(np.float64) - expected) <= rtol(dtype) * scale)
    np.testing.assert_array_equal(y, cma.causal_moving_avg(tf.cast(X, dtype), 4, axis=1).numpy())


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
