"""The Python API of the op: the input as a tensor, the shared argument checks, the compiled kernel."""

import numpy as np
import tensorflow as tf

from causal_moving_avg._checks import check_call, check_not_masked
from causal_moving_avg._loader import ops


def to_input_tensor(x) -> tf.Tensor:
    """Converts x (tensor, array, array-like, list) to a tensor of its own dtype; `check_call`
    checks that dtype and the rank."""
    # A tf.Tensor is used as is: converting it again costs more than the op on small inputs.
    if not isinstance(x, tf.Tensor):
        if isinstance(x, (tf.RaggedTensor, tf.SparseTensor)):
            kind = type(x).__name__
            raise TypeError(f"x must be a dense tensor, got a {kind} (convert it with .to_tensor())")
        check_not_masked(x, "x")
        if not tf.is_tensor(x) and (hasattr(x, "__array__") or isinstance(x, memoryview)):
            x = np.asarray(x)  # pandas, memoryviews and other typed array-likes keep their dtype
        if tf.is_tensor(x) or isinstance(x, (np.ndarray, np.generic)):
            x = tf.convert_to_tensor(x)  # keeps the array's dtype: no silent cast
        else:
            x = tf.convert_to_tensor(x, dtype_hint=tf.float32)  # Python numbers, as TF's default
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
    x = to_input_tensor(x)
    args = check_call(window, edge, axis, x.shape.rank, x.dtype.name, "x")
    return ops.causal_moving_avg(x, window=args.window, axis=args.axis, edge=args.edge, name=name)
