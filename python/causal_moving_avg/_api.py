"""The Python API of the op: argument checks with clear errors, then the compiled kernel."""

import numbers

import numpy as np
import tensorflow as tf

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
      ``tf.stop_gradient``: no gradient flows back through it. The same compiled kernels run
      eagerly, in ``tf.function`` and under XLA (``jit_compile=True``), with the same results.
    """
    window = check_window(window)
    edge = check_edge(edge)
    x = to_input_tensor(x)
    axis = resolve_axis(axis, x.shape.rank)
    return ops.causal_moving_avg(x, window=window, axis=axis, edge=edge, name=name)
