"""The Python API of the op: argument checks with clear errors, then the compiled kernel."""

import numbers

import numpy as np
import tensorflow as tf
from tensorflow.compiler.tf2xla.python import xla as tf2xla
from tensorflow.python.ops import control_flow_util

from causal_moving_avg._loader import ops

EDGES = ("zeros", "partial")
DTYPES = (tf.float16, tf.bfloat16, tf.float32, tf.float64)
_DTYPE_SET = frozenset(DTYPES)  # a set: membership is a hash, not four DType comparisons
_MAX_WINDOW = 2**63 - 1  # the op's window attribute is an int64


def check_window(window) -> int:
    if isinstance(window, bool) or not isinstance(window, numbers.Integral):
        raise TypeError(f"window must be an int >= 1, got {window!r} of type {type(window).__name__}")
    if not 1 <= window <= _MAX_WINDOW:
        raise ValueError(f"window must be an int >= 1 (and below 2**63), got {window}")
    return int(window)


def check_edge(edge) -> str:
    if not isinstance(edge, str) or edge not in EDGES:
        raise ValueError(f"edge must be one of {EDGES}, got {edge!r}")
    return edge


def resolve_axis(axis, rank) -> int:
    """Checks `axis` against `rank` (None when unknown); None means Conv1D's steps axis."""
    if axis is None:
        if rank is None:
            raise ValueError("axis=None needs a tensor of known rank; pass axis explicitly")
        return 1 if rank >= 2 else 0
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be an int, got {axis!r} of type {type(axis).__name__}")
    if rank is not None and not -rank <= axis < rank:
        raise ValueError(
            f"axis {axis} is out of range for a tensor of rank {rank} (allowed: {-rank} to {rank - 1})"
        )
    return int(axis)


def check_not_masked(x, name="x"):
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a masked array: its masked values would be averaged (fill them)")


def to_input_tensor(x) -> tf.Tensor:
    """Converts x (tensor, array, array-like, list) and checks its dtype and rank."""
    # A tf.Tensor is used as is: converting it again costs more than the op on small inputs.
    if not isinstance(x, tf.Tensor):
        if isinstance(x, (tf.RaggedTensor, tf.SparseTensor)):
            kind = type(x).__name__
            raise TypeError(f"x must be a dense tensor, got a {kind} (convert it with .to_tensor())")
        check_not_masked(x)
        if not tf.is_tensor(x) and (hasattr(x, "__array__") or isinstance(x, memoryview)):
            x = np.asarray(x)  # pandas, memoryviews and other typed array-likes keep their dtype
        if tf.is_tensor(x) or isinstance(x, (np.ndarray, np.generic)):
            x = tf.convert_to_tensor(x)  # keeps the array's dtype: no silent cast
        else:
            x = tf.convert_to_tensor(x, dtype_hint=tf.float32)  # Python numbers, as TF's default
    if x.dtype not in _DTYPE_SET:
        names = ", ".join(d.name for d in DTYPES)
        raise TypeError(f"x must have dtype {names}; got {x.dtype.name} (cast it first)")
    if x.shape.rank == 0:
        raise ValueError("x must have rank >= 1 (a sequence), got a scalar")
    return x


def causal_moving_avg(x, window=3, axis=None, edge="zeros", name=None):
    """Causal moving average of `x` along `axis`.

    ``y[t] = (x[t] + x[t-1] + ... + x[t-window+1]) / D(t)`` where inputs before the start count
    as zeros, and ``D(t) = window`` for ``edge="zeros"`` (exactly a causal ``Conv1D`` with all
    weights ``1/window``) or ``D(t) = min(t + 1, window)`` for ``edge="partial"`` (the mean of the
    samples seen so far, as pandas ``rolling(window, min_periods=1).mean()``).

    Args:
      x: a tensor, NumPy array or list of float16, bfloat16, float32 or float64, rank >= 1.
      window: int >= 1; may exceed the length of the axis.
      axis: the axis to average along, negative counts from the end. None means the steps axis
        of Conv1D's ``[batch, steps, channels]`` layout: 1 for rank >= 2, 0 for rank 1.
      edge: "zeros" or "partial".
      name: optional name for the op.

    Returns:
      A tensor of the same shape and dtype as `x`. A constant to autodiff, like
      ``tf.stop_gradient``: no gradient flows back through it.
    """
    window = check_window(window)
    edge = check_edge(edge)
    x = to_input_tensor(x)
    axis = resolve_axis(axis, x.shape.rank)
    if not tf.executing_eagerly() and in_xla_context():
        with tf.name_scope(name or "CausalMovingAvgXla"):
            return xla_composition(x, window, axis, edge)
    return ops.causal_moving_avg(x, window=window, axis=axis, edge=edge, name=name)


def in_xla_context() -> bool:
    """True while tracing for XLA (tf.function(jit_compile=True), Keras jit_compile=True), where
    a custom kernel cannot run."""
    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def xla_composition(x, window, axis, edge):
    """The op as XLA-compilable TensorFlow ops, for use inside XLA-compiled functions.

    Every window sum adds inputs only, never takes a difference of prefix sums: block sums of
    2^j steps come from doubling, B_j(t) = B_{j-1}(t) + B_{j-1}(t - 2^(j-1)), and a window of W
    steps adds the blocks of W's binary digits, one after another. So, as with direct summation,
    a NaN/Inf or a huge value affects exactly the windows that hold it (+Inf meeting -Inf gives
    NaN), and rounding is that of a pairwise float64 sum of the window's own values, whatever the
    sequence's length. O(log W) passes. A constant to autodiff.
    """
    if x.shape.rank is None:
        raise ValueError("inside XLA, x needs a known rank")
    rank = x.shape.rank
    axis %= rank
    perm = [d for d in range(rank) if d != axis] + [axis]  # the steps axis last
    values = tf.transpose(tf.cast(tf.stop_gradient(x), tf.float64), perm)
    steps = tf.shape(values)[-1]
    # A window longer than the sequence sums the same inputs as one exactly as long.
    static_steps = values.shape[-1]
    summed_window = window if static_steps is None else max(1, min(window, static_steps))

    def delayed(series, shift):
        """series[t - shift], zeros before the start."""
        if static_steps is not None:  # static sizes: XLA fuses the pad into the sums that read it
            shift = min(shift, static_steps)
            padding = [[0, 0]] * (rank - 1) + [[shift, 0]]
            return tf.pad(series[..., : static_steps - shift], padding)
        shift = tf.cast(tf.minimum(tf.constant(shift, tf.int64), tf.cast(steps, tf.int64)), tf.int32)
        return tf.concat([tf.zeros_like(series[..., :shift]), series[..., : steps - shift]], axis=-1)

    def window_sums(series):
        block, block_steps = series, 1  # B_j and 2^j
        total, summed_steps = None, 0  # the sum so far covers steps t - summed_steps + 1 .. t
        remaining = summed_window
        while True:
            if remaining & 1:
                part = delayed(block, summed_steps) if summed_steps else block
                total = part if total is None else total + part
                summed_steps += block_steps
            remaining >>= 1
            if not remaining:
                return total
            # A barrier keeps XLA from fusing the doublings into loops that recompute block sums
            # from the inputs (XLA on CPU, W = 1024 on [32, 1024, 16]: 38 ms without, 22 with).
            (block,) = tf2xla.optimization_barrier(block + delayed(block, block_steps))
            block_steps *= 2

    if edge == "partial":
        divisor = tf.cast(tf.minimum(tf.range(1, steps + 1, dtype=tf.int64), window), tf.float64)
    else:
        divisor = tf.cast(tf.fill([steps], tf.constant(window, tf.int64)), tf.float64)
    mean = window_sums(values) / divisor
    if x.dtype == tf.float64:
        # Sums of values near the largest double can overflow where the mean does not: such
        # windows are summed again scaled by 2^-64 (exact above 2^-958; XLA on CPU flushes
        # subnormals, so the unscaled sums serve everywhere else), only when a mean is not finite.
        unscaled = mean
        mean = tf.cond(
            tf.reduce_all(tf.math.is_finite(unscaled)),
            lambda: unscaled,
            lambda: tf.where(
                tf.math.is_finite(unscaled), unscaled, window_sums(values * 2.0**-64) / divisor * 2.0**64
            ),
        )
    elif x.dtype != tf.float32:
        mean = round_to_odd_float32(mean)  # XLA converts float64 to 16 bits through float32
    inverse = [perm.index(d) for d in range(rank)]
    return tf.cast(tf.transpose(mean, inverse), x.dtype)


def round_to_odd_float32(values):
    """float64 values as float32 rounded to odd (truncated toward zero, the last bit set when
    anything was cut off): a cast of that to a 16-bit type rounds as one cast of the float64 would,
    where a cast through float32 rounded to nearest would round twice."""
    nearest = tf.cast(values, tf.float32)
    widened = tf.cast(nearest, tf.float64)
    bits = tf.bitcast(nearest, tf.int32)
    bits -= tf.cast(tf.abs(widened) > tf.abs(values), tf.int32)  # rounded away from zero: step back
    inexact = (widened != values) & (values == values)
    bits = tf.where(inexact, tf.bitwise.bitwise_or(bits, 1), bits)
    return tf.bitcast(bits, tf.float32)
