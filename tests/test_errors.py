"""Bad input raises at once, with a message that names the argument and what is allowed."""

import numpy as np
import pytest
import tensorflow as tf

from causal_moving_avg import CausalMovingAverage, causal_moving_avg, numpy_causal_moving_avg
from causal_moving_avg._loader import ops
from conftest import EDGES

X = np.zeros((2, 5, 3), np.float32)


@pytest.mark.parametrize("window", [0, -1, -(2**40)])
def test_window_below_one(window):
    with pytest.raises(ValueError, match=r"window must be an int >= 1"):
        causal_moving_avg(X, window=window)


@pytest.mark.parametrize("window", [2.5, 3.0, True, "3", None, np.float32(3)])
def test_window_not_an_int(window):
    with pytest.raises(TypeError, match=r"window must be an int >= 1"):
        causal_moving_avg(X, window=window)


def test_window_numpy_int_is_accepted():
    assert causal_moving_avg(X, window=np.int64(2)).shape == X.shape


@pytest.mark.parametrize("axis", [3, -4, 100])
def test_axis_out_of_range(axis):
    with pytest.raises(ValueError, match=r"axis .* out of range for a tensor of rank 3 \(allowed: -3 to 2\)"):
        causal_moving_avg(X, axis=axis)


@pytest.mark.parametrize("axis", [1.0, "1", True, [1]])
def test_axis_not_an_int(axis):
    with pytest.raises(TypeError, match=r"axis must be an int"):
        causal_moving_avg(X, axis=axis)


@pytest.mark.parametrize("edge", ["Zeros", "same", "", None, 0])
def test_edge_not_one_of_the_two(edge):
    with pytest.raises(ValueError, match=r"edge must be one of \('zeros', 'partial'\)"):
        causal_moving_avg(X, edge=edge)


@pytest.mark.parametrize(
    "x",
    [
        np.zeros(4, np.int32),
        np.zeros(4, np.int64),
        np.zeros(4, np.complex64),
        np.array(["a", "b"]),
        np.zeros(4, bool),
    ],
)
def test_dtype_outside_the_four(x):
    with pytest.raises(TypeError, match=r"x must have dtype float16, bfloat16, float32, float64; got"):
        causal_moving_avg(x)


@pytest.mark.parametrize("x", [1.0, np.float32(2.0), tf.constant(3.0)])
def test_scalar(x):
    with pytest.raises(ValueError, match=r"x must have rank >= 1"):
        causal_moving_avg(x)


def test_unknown_rank_needs_an_explicit_axis():
    @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
    def f(x):
        return causal_moving_avg(x)

    with pytest.raises(ValueError, match=r"axis=None needs a tensor of known rank"):
        f.get_concrete_function()


def test_kernel_rejects_a_scalar_and_a_bad_axis_fed_at_run_time():
    """With the rank unknown while tracing, the kernel itself checks what arrives."""

    @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
    def last_axis(x):
        return causal_moving_avg(x, axis=-1)

    with pytest.raises(tf.errors.InvalidArgumentError, match=r"x must have rank >= 1"):
        last_axis(tf.constant(1.0))

    @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
    def axis_two(x):
        return causal_moving_avg(x, axis=2)

    with pytest.raises(tf.errors.InvalidArgumentError, match=r"axis 2 is out of range for x of rank 2"):
        axis_two(tf.zeros((3, 4)))


def test_raw_op_shape_function_rejects_at_graph_construction():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"axis 5 is out of range for x of rank 3"):
            ops.causal_moving_avg(tf.zeros((2, 3, 4)), window=3, axis=5)
        with pytest.raises(ValueError, match=r"x must have rank >= 1"):
            ops.causal_moving_avg(tf.constant(1.0), window=3, axis=0)
        with pytest.raises(ValueError, match=r"window"):
            ops.causal_moving_avg(tf.zeros((2, 3)), window=0, axis=0)


def test_sparse_is_named():
    # Ragged tensors are averaged row by row (tests/test_segments.py); sparse ones are refused.
    with pytest.raises(TypeError, match=r"x must be a dense or ragged tensor, got a SparseTensor"):
        causal_moving_avg(tf.sparse.from_dense(tf.ones((2, 3))), axis=1)


def test_masked_array_is_refused_not_averaged_with_its_masked_values():
    masked = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    with pytest.raises(TypeError, match="x must not be a masked array"):
        causal_moving_avg(masked, window=2)


# The three entry points, each with its input's name in errors: one check of a call's arguments
# serves them all, so the same bad argument raises the same error from each.
ENTRY_POINTS = {
    "op": (causal_moving_avg, "x"),
    "numpy": (numpy_causal_moving_avg, "a"),
    "layer": (lambda x, **kwargs: CausalMovingAverage(**kwargs)(x), "x"),
}


@pytest.mark.parametrize(
    "kwargs,x,error,message",
    [
        ({"window": 0}, X, ValueError, "window must be an int >= 1 (and below 2**63), got 0"),
        ({"window": 2.5}, X, TypeError, "window must be an int >= 1, got 2.5 of type float"),
        ({"edge": "bogus"}, X, ValueError, f"edge must be one of {EDGES}, got 'bogus'"),
        ({"axis": 3}, X, ValueError, "axis 3 is out of range for a tensor of rank 3 (allowed: -3 to 2)"),
        ({}, np.float32(2.0), ValueError, "{name} must have rank >= 1 (a sequence), got a scalar"),
    ],
    ids=["window=0", "window=2.5", "edge=bogus", "axis=3", "scalar"],
)
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_gives_the_same_error(entry, kwargs, x, error, message):
    function, input_name = ENTRY_POINTS[entry]
    with pytest.raises(error) as raised:
        function(x, **kwargs)
    assert type(raised.value) is error
    assert str(raised.value) == message.format(name=input_name)
