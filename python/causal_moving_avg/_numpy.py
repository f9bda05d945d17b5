"""The NumPy entry point: the op's C++ core on NumPy arrays, no graph and no tensors."""

import numpy as np

from causal_moving_avg import _numpy_core
from causal_moving_avg._api import EDGES, check_edge, check_not_masked, check_window, resolve_axis

NUMPY_DTYPES = (np.float16, np.float32, np.float64)


def numpy_causal_moving_avg(a, window=3, axis=None, edge="zeros"):
    """Causal moving average of a NumPy array, with the semantics of ``causal_moving_avg``.

    Returns a new array of the input's dtype (float16, float32 or float64) and shape. Any strides
    are accepted (a non-contiguous view is copied once). The GIL is released while it computes,
    and the work is spread over the machine's cores with bitwise-identical results.
    """
    window = check_window(window)
    edge = check_edge(edge)
    check_not_masked(a, name="a")
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
        if a.dtype.kind in "iub":  # a list of Python numbers: NumPy's default float
            a = a.astype(np.float64)
    if not a.dtype.isnative:  # big-endian data: the same values in this machine's byte order
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype not in NUMPY_DTYPES:
        raise TypeError(f"a must have dtype float16, float32 or float64; got {a.dtype} (cast it first)")
    if a.ndim == 0:
        raise ValueError("a must have rank >= 1 (a sequence), got a scalar")
    axis = resolve_axis(axis, a.ndim) % a.ndim
    return _numpy_core.causal_moving_avg(a, window, axis, EDGES.index(edge))
