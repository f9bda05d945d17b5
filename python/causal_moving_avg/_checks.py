"""Argument checks shared by the TensorFlow op, the Keras layer and the NumPy function.

`check_call` checks a whole call's arguments, in one place and one order, for all three entry
points; they keep only what is their own (turning the input into a tensor or an array) and hand it
the input's rank and dtype. A new argument of the op is a new parameter of `check_call` and one
check in it.

Free of TensorFlow: the edge modes and dtypes come from the compiled core's own lists (the NumPy
binding exports them), so a new mode or dtype is added in one place, in C++.
"""

import numbers
from typing import NamedTuple

import numpy as np

from causal_moving_avg._numpy_core import DTYPES, EDGES

MAX_WINDOW = 2**63 - 1  # the op's window attribute is an int64

# The `rank` of a call whose input is not known yet (a layer being constructed): the checks that
# need the input wait for it, and axis=None stays None. Distinct from rank None, an input of
# unknown rank (a graph tensor).
NO_INPUT = object()

_DTYPES = frozenset(DTYPES)  # a hash for the membership test of every call


class CallArgs(NamedTuple):
    """A call's arguments once checked, as the kernels take them."""

    window: int
    edge: str
    axis: int | None  # None only for a call with NO_INPUT (resolved per input)


def check_call(window, edge, axis, rank=NO_INPUT, dtype=None, name="x") -> CallArgs:
    """Checks the arguments of one call of the op, raising the error each entry point raises.

    Args:
      window, edge, axis: as the caller got them.
      rank: the input's rank; None when unknown (a graph tensor), NO_INPUT before there is one.
      dtype: the input's dtype as a string, as the error shows it; None: not checked (yet).
      name: the input's name in errors.

    Returns:
      CallArgs with window an int, edge, and axis resolved for the rank (None means Conv1D's steps
      axis), as given: negative axes stay negative.

    The order is fixed: window, edge, the input's dtype, its rank, then axis.
    """
    window = _check_window(window)
    edge = _check_edge(edge)
    if dtype is not None and dtype not in _DTYPES:
        raise TypeError(f"{name} must have dtype {', '.join(DTYPES)}; got {dtype} (cast it first)")
    if rank is NO_INPUT:
        return CallArgs(window, edge, None if axis is None else _check_axis(axis, None))
    if rank == 0:
        raise ValueError(f"{name} must have rank >= 1 (a sequence), got a scalar")
    return CallArgs(window, edge, _check_axis(axis, rank))


def check_not_masked(x, name):
    """Refuses a masked array before it is converted (conversion would drop its mask)."""
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a masked array: its masked values would be averaged (fill them)")


def is_typed_array_like(x) -> bool:
    """Whether x carries its own dtype (NumPy arrays and scalars, pandas, memoryviews, anything
    with ``__array__``), which both bindings keep, where a list of Python numbers takes the
    default float."""
    return hasattr(x, "__array__") or isinstance(x, memoryview)


def _check_window(window) -> int:
    if isinstance(window, bool) or not isinstance(window, numbers.Integral):
        raise TypeError(f"window must be an int >= 1, got {window!r} of type {type(window).__name__}")
    if not 1 <= window <= MAX_WINDOW:
        raise ValueError(f"window must be an int >= 1 (and below 2**63), got {window}")
    return int(window)


def _check_edge(edge) -> str:
    if not isinstance(edge, str) or edge not in EDGES:
        raise ValueError(f"edge must be one of {EDGES}, got {edge!r}")
    return edge


def _check_axis(axis, rank) -> int:
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
