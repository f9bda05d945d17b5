"""The NumPy entry point: the op's C++ core on NumPy arrays, no graph and no tensors.

Importing it loads neither TensorFlow nor Keras.
"""

import numpy as np

from causal_moving_avg import _numpy_core
from causal_moving_avg._checks import check_call, check_not_masked, is_typed_array_like
from causal_moving_avg._history import (
    StreamState,
    arrays_state,
    check_history_shape,
    check_segment_ids,
    check_state,
    check_state_size,
    host_seen,
)


def numpy_causal_moving_avg(
    a, window=3, axis=None, edge="zeros", initial_state=None, return_state=False, segment_ids=None
):
    """Causal moving average of a NumPy array, with the semantics of ``causal_moving_avg``.

    ``segment_ids`` (int32/int64, shape ``a.shape[:axis + 1]``) cut the windows at packed
    sequences' starts, as for the op. Returns a new array of the input's dtype (float16, bfloat16
    from ml_dtypes, float32 or float64) and shape, bitwise equal to the TensorFlow op's result on CPU; with
    ``return_state=True`` the tuple ``(y, state)``, the state's parts NumPy arrays. Any strides
    are accepted (a non-contiguous view is copied once). The GIL is released while it computes,
    and large arrays are spread over the machine's cores with bitwise-identical results.
    """
    a = _as_array(a, "a")
    args = check_call(window, edge, axis, a.ndim, str(a.dtype), "a")
    if not isinstance(return_state, bool):
        raise TypeError(f"return_state must be a bool, got {return_state!r}")
    axis = args.axis % a.ndim  # the core takes the axis counted from the start
    if segment_ids is not None:
        if initial_state is not None or return_state:
            raise ValueError(
                "segment_ids cannot be combined with initial_state or return_state: a stream "
                "continues one sequence per lane (feed packed sequences without a state)"
            )
        ids = np.asarray(segment_ids)
        check_segment_ids(str(ids.dtype), ids.shape, a.shape, axis)
        if not ids.dtype.isnative:
            ids = ids.astype(ids.dtype.newbyteorder("="))
        return _numpy_core.causal_moving_avg(a, args.window, axis, args.edge, segment_ids=ids)
    if initial_state is None:
        y = _numpy_core.causal_moving_avg(a, args.window, axis, args.edge)
        if not return_state:
            return y
        check_state_size(a.shape, axis, args.window, a.dtype.itemsize)
        return y, arrays_state(a, args.window, axis)
    history, seen = check_state(initial_state)
    history = np.asarray(history)
    if history.dtype != a.dtype:
        raise TypeError(
            f"initial_state's history has dtype {history.dtype}, a has {a.dtype}: a state from a "
            "stream of another dtype?"
        )
    check_history_shape(history.shape, a.shape, axis, args.window)
    # Any array-like count (a NumPy scalar, a state returned by the op: an eager tensor).
    count = host_seen(seen if isinstance(seen, (int, np.integer)) else np.asarray(seen))
    if count is None:
        raise TypeError(f"initial_state's step count must be an integer scalar, got {seen!r}")
    if count < 0:
        raise ValueError(f"initial_state's step count must be >= 0, got {count}")
    y, next_history, next_seen = _numpy_core.causal_moving_avg(
        a, args.window, axis, args.edge, history, count
    )
    if not return_state:
        return y
    return y, StreamState(next_history, np.int64(next_seen))


def numpy_stream_state(history, window=3, axis=None):
    """The state of a stream that has seen `history` (NumPy), as ``stream_state`` does for
    tensors."""
    history = _as_array(history, "history")
    args = check_call(window, "zeros", axis, history.ndim, str(history.dtype), "history")
    check_state_size(history.shape, args.axis, args.window, history.dtype.itemsize)
    return arrays_state(history, args.window, args.axis % history.ndim)


def _as_array(a, name):
    check_not_masked(a, name)
    if not isinstance(a, np.ndarray):
        typed = is_typed_array_like(a)
        a = np.asarray(a)  # pandas, memoryviews and other typed array-likes keep their dtype
        if not typed and a.dtype.kind in "iub":  # a list of Python numbers: NumPy's default float
            a = a.astype(np.float64)
    if not a.dtype.isnative:  # big-endian data: the same values in this machine's byte order
        a = a.astype(a.dtype.newbyteorder("="))
    return a
