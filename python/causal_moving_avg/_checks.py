"""Argument checks shared by the TensorFlow op, the Keras layer and the NumPy function.

Free of TensorFlow: the edge modes and dtypes come from the compiled core's own lists (the NumPy
binding exports them), so a new mode or dtype is added in one place, in C++.
"""

import numbers

import numpy as np

from causal_moving_avg._numpy_core import DTYPES, EDGES

MAX_WINDOW = 2**63 - 1  # the op's window attribute is an int64


def check_window(window) -> int:
    if isinstance(window, bool) or not isinstance(window, numbers.Integral):
        raise TypeError(f"window must be an int >= 1, got {window!r} of type {type(window).__name__}")
    if not 1 <= window <= MAX_WINDOW:
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


def check_not_masked(x, name):
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a masked array: its masked values would be averaged (fill them)")


def dtype_error(name, got) -> TypeError:
    return TypeError(f"{name} must have dtype {', '.join(DTYPES)}; got {got} (cast it first)")


def check_rank(rank, name):
    if rank == 0:
        raise ValueError(f"{name} must have rank >= 1 (a sequence), got a scalar")
