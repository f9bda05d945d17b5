"""What precedes a window, beyond x itself: a stream's state (what a call returns with
``return_state=True`` and takes as ``initial_state``, so that a moving average continues across
calls) and sequence ids (``segment_ids``: where packed sequences begin), with their checks. Free
of TensorFlow: the NumPy function uses it too.
"""

from typing import Any, NamedTuple

import numpy as np


class StreamState(NamedTuple):
    """The state of a stream between two calls (a tuple: it passes through ``tf.nest``,
    ``tf.function`` arguments and ``tf.while_loop`` loop variables, whatever the chunk's length).

    Attributes:
      history: the stream's last ``window - 1`` inputs, oldest first, with zeros in place of the
        steps before the stream began: x's dtype and x's shape with the averaged axis
        ``window - 1`` long.
      seen: int64 scalar, how many steps the stream has seen (what ``edge="partial"`` counts).
    """

    history: Any
    seen: Any


def check_state(state, name="initial_state"):
    """The state's two parts, or a TypeError naming what was passed instead."""
    if isinstance(state, tuple) and len(state) == 2:
        return state[0], state[1]
    raise TypeError(
        f"{name} must be a StreamState (history, seen) returned by a call with return_state=True "
        f"or built by stream_state(), got {type(state).__name__}"
    )


def host_seen(seen, name="initial_state"):
    """A state's step count given on the host (a Python or NumPy integer, or a 0-d integer
    array) as an int, or None for anything else (a tensor). A value no int64 holds is refused
    here: converted, it would wrap to another count."""
    if isinstance(seen, bool):
        return None
    if isinstance(seen, int):
        value = seen
    else:
        count = np.asarray(seen) if isinstance(seen, (np.integer, np.ndarray)) else None
        if count is None or count.shape != () or count.dtype.kind not in "iu":
            return None
        value = int(count)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"{name}'s step count must fit an int64 (at most 2**63 - 1), got {value}")
    return value


def check_history_shape(history_shape, x_shape, axis, window, name="initial_state"):
    """ValueError unless the history is x's shape with the averaged axis window - 1 long (None
    entries: unknown, not checked)."""
    if history_shape is None or x_shape is None:
        return
    history_shape, x_shape = list(history_shape), list(x_shape)
    axis = axis % len(x_shape)
    expected = [*x_shape[:axis], window - 1, *x_shape[axis + 1 :]]
    fits = len(history_shape) == len(expected) and all(
        h is None or e is None or h == e for h, e in zip(history_shape, expected, strict=True)
    )
    if not fits:
        shown = [("?" if e is None else e) for e in expected]
        raise ValueError(
            f"{name}'s history has shape {tuple(history_shape)}, but x of shape {tuple(x_shape)} "
            f"with window {window} needs {tuple(shown)} (x's shape with axis {axis} window - 1 "
            "long): a state from another window, batch or channel count?"
        )


def check_state_size(x_shape, axis, window, itemsize):
    """ValueError for a state too large to exist (window - 1 steps per lane)."""
    lanes = 1
    for d, n in enumerate(x_shape):
        if d != axis % len(x_shape) and n is not None:
            lanes *= n
    if (window - 1) * lanes * itemsize >= 2**48:
        raise ValueError(
            f"window {window} is too long for a stream: its state would hold window - 1 steps per "
            f"lane ({(window - 1) * lanes * itemsize} bytes)"
        )


def arrays_state(history: np.ndarray, window: int, axis: int) -> StreamState:
    """The state after a stream has seen `history` (any length along `axis`, checked), as NumPy
    arrays."""
    steps = history.shape[axis]
    keep = min(steps, window - 1)
    tail = np.take(history, np.arange(steps - keep, steps), axis=axis)
    pad_shape = list(history.shape)
    pad_shape[axis] = window - 1 - keep
    padded = np.concatenate([np.zeros(pad_shape, history.dtype), tail], axis=axis)
    return StreamState(np.ascontiguousarray(padded), np.int64(steps))


def check_segment_ids(ids_dtype, ids_shape, x_shape, axis, name="segment_ids"):
    """TypeError unless int32/int64, ValueError unless the shape is x's up to and including the
    axis (None entries: unknown, not checked)."""
    if ids_dtype not in ("int32", "int64"):
        raise TypeError(f"{name} must be int32 or int64, got {ids_dtype}")
    if ids_shape is None or x_shape is None:
        return
    axis = axis % len(x_shape)
    expected = list(x_shape[: axis + 1])
    fits = len(ids_shape) == len(expected) and all(
        i is None or e is None or i == e for i, e in zip(ids_shape, expected, strict=True)
    )
    if not fits:
        shown = tuple("?" if e is None else e for e in expected)
        raise ValueError(
            f"{name} has shape {tuple(ids_shape)}, but x of shape {tuple(x_shape)} averaged along "
            f"axis {axis} needs {shown} (x's dimensions up to and including the axis)"
        )
