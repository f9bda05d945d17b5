"""The Python API of the op: the input as a tensor, the shared argument checks, the compiled kernel."""

import numpy as np
import tensorflow as tf

from causal_moving_avg._checks import check_call, check_not_masked, is_typed_array_like
from causal_moving_avg._history import (
    StreamState,
    check_history_shape,
    check_segment_ids,
    check_state,
    check_state_size,
    host_seen,
)
from causal_moving_avg._loader import ops


def to_input_tensor(x) -> tf.Tensor:
    """Converts x (tensor, array, array-like, list) to a tensor of its own dtype; `check_call`
    checks that dtype and the rank."""
    # A tf.Tensor is used as is: converting it again costs more than the op on small inputs.
    if not isinstance(x, tf.Tensor):
        if isinstance(x, tf.SparseTensor):
            raise TypeError(
                "x must be a dense or ragged tensor, got a SparseTensor (convert it with .to_dense())"
            )
        check_not_masked(x, "x")
        if not tf.is_tensor(x) and is_typed_array_like(x):
            x = np.asarray(x)  # pandas, memoryviews and other typed array-likes keep their dtype
        if tf.is_tensor(x) or isinstance(x, (np.ndarray, np.generic)):
            x = tf.convert_to_tensor(x)  # keeps the array's dtype: no silent cast
        else:
            x = tf.convert_to_tensor(x, dtype_hint=tf.float32)  # Python numbers, as TF's default
    return x


def causal_moving_avg(
    x,
    window=3,
    axis=None,
    edge="zeros",
    initial_state=None,
    return_state=False,
    segment_ids=None,
    name=None,
):
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
      initial_state: None (x starts the stream), or a ``StreamState`` returned by an earlier
        call with ``return_state=True`` (or built by ``stream_state``) for the same window,
        dtype and axis, and x's shape apart from the averaged axis: x then continues that
        stream, and t counts from the stream's start.
      return_state: also return the stream's state after x, for the next call.
      segment_ids: None, or int32/int64 ids of shape ``x.shape[:axis + 1]`` for packed
        sequences: a sequence begins at step 0 and wherever the id differs from the previous
        step's, and each window is cut at its sequence's start (the edge rule applies there).
        A ``tf.RaggedTensor`` x ragged along the averaged axis is averaged row by row this way.
      name: optional name for the op.

    Returns:
      A tensor of the same shape and dtype as `x`; with ``return_state=True`` the tuple
      ``(y, state)``. A constant to autodiff, like ``tf.stop_gradient``: no gradient flows back
      through it. The same compiled kernels run eagerly, in ``tf.function`` and under XLA
      (``jit_compile=True``), with the same results.
    """
    if isinstance(x, tf.RaggedTensor):
        if segment_ids is not None or initial_state is not None or return_state:
            raise ValueError(
                "a RaggedTensor x takes no segment_ids, initial_state or return_state: its rows are "
                "its sequences"
            )
        return _ragged(x, window, axis, edge, name)
    x = to_input_tensor(x)
    args = check_call(window, edge, axis, x.shape.rank, x.dtype.name, "x")
    if not isinstance(return_state, bool):
        raise TypeError(f"return_state must be a bool, got {return_state!r}")
    attrs = {"window": args.window, "axis": args.axis, "edge": args.edge, "name": name}
    if segment_ids is not None:
        if initial_state is not None or return_state:
            raise ValueError(
                "segment_ids cannot be combined with initial_state or return_state: a stream "
                "continues one sequence per lane (feed packed sequences without a state)"
            )
        ids = segment_ids if isinstance(segment_ids, tf.Tensor) else tf.convert_to_tensor(segment_ids)
        check_segment_ids(
            ids.dtype.name,
            ids.shape.as_list() if ids.shape.rank is not None else None,
            x.shape.as_list() if x.shape.rank is not None else None,
            args.axis,
        )
        return ops.causal_moving_avg_segments(x, ids, **attrs)
    if initial_state is None:
        y = ops.causal_moving_avg(x, **attrs)
        if not return_state:
            return y
        return y, stream_state(x, window=args.window, axis=args.axis)
    history, seen = _state_tensors(initial_state, x, args.window, args.axis)
    y, next_history, next_seen = ops.causal_moving_avg_stream(x, history, seen, **attrs)
    if not return_state:
        return y
    return y, StreamState(next_history, next_seen)


def stream_state(history, window=3, axis=None):
    """The state of a stream that has seen `history` (its inputs so far, any number of steps
    along `axis`, zero included): pass it as ``initial_state`` to continue the stream.

    Only the last ``window - 1`` steps are kept; the state's step count is the length of
    `history` along `axis` (what ``edge="partial"`` counts).
    """
    history = to_input_tensor(history)
    args = check_call(window, "zeros", axis, history.shape.rank, history.dtype.name, "history")
    rank = history.shape.rank
    axis = args.axis % rank
    check_state_size(history.shape.as_list(), axis, args.window, history.dtype.size)
    steps = _steps(history, axis)
    keep = tf.minimum(steps, args.window - 1)
    tail = tf.gather(history, tf.range(steps - keep, steps), axis=axis)
    pad = tf.tensor_scatter_nd_update(
        tf.shape(history, out_type=tf.int64), [[axis]], tf.reshape(args.window - 1 - keep, [1])
    )
    padded = tf.concat([tf.zeros(pad, history.dtype), tail], axis=axis)
    return StreamState(padded, steps)


def _ragged(x, window, axis, edge, name):
    """A RaggedTensor: along its innermost ragged axis each row is a sequence (the op's ids are
    the rows' indices); along a uniform axis after it, the op runs on the flat values."""
    rank = x.shape.rank
    args = check_call(window, edge, axis, rank, x.dtype.name, "x")
    axis = args.axis % rank
    if axis == 0:
        raise ValueError(
            "cannot average a RaggedTensor along axis 0, its batch axis (rows have no order in time)"
        )
    if axis < x.ragged_rank:
        raise ValueError(
            f"cannot average a RaggedTensor along axis {axis}: its elements are ragged in turn; "
            f"average along its innermost ragged axis ({x.ragged_rank}) or a uniform one after it"
        )
    values = x.flat_values
    if axis > x.ragged_rank:
        y = causal_moving_avg(values, args.window, axis - x.ragged_rank, args.edge, name=name)
        return x.with_flat_values(y)
    rows = x.nested_value_rowids()[-1]
    y = ops.causal_moving_avg_segments(
        values[None], rows[None], window=args.window, axis=1, edge=args.edge, name=name
    )
    return x.with_flat_values(y[0])


def _steps(x, axis):
    """x's length along axis, an int64 scalar tensor."""
    static = x.shape[axis]
    if static is not None:
        return tf.constant(static, tf.int64)
    return tf.shape(x, out_type=tf.int64)[axis]


def _state_tensors(state, x, window, axis):
    """The state's history and step count as tensors, checked against x as far as shapes are
    known here (the kernels check what is known only at run time). Tensors pass unconverted: a
    step loop calls this once per step."""
    history, seen = check_state(state)
    if not isinstance(history, tf.Tensor):
        history = tf.convert_to_tensor(history)
    if history.dtype != x.dtype:
        raise TypeError(
            f"initial_state's history has dtype {history.dtype.name}, x has {x.dtype.name}: a "
            "state from a stream of another dtype?"
        )
    history_shape, x_shape = history.shape, x.shape
    if x_shape.rank is not None and history_shape.rank is not None:
        check_history_shape(history_shape.as_list(), x_shape.as_list(), axis, window)
    if not isinstance(seen, tf.Tensor) or seen.dtype != tf.int64:
        count = host_seen(seen)
        seen = tf.convert_to_tensor(seen) if count is None else tf.constant(count, tf.int64)
        # A uint64 count may not fit: refused below rather than wrapped by the cast.
        if seen.dtype.is_integer and seen.dtype not in (tf.int64, tf.uint64):
            seen = tf.cast(seen, tf.int64)
        if seen.dtype != tf.int64:
            raise TypeError(f"initial_state's step count must be an int64 scalar, got {seen.dtype.name}")
    if seen.shape.rank is not None and seen.shape.rank != 0:
        raise TypeError(f"initial_state's step count must be an int64 scalar, got shape {seen.shape}")
    return history, seen
