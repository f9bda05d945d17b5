"""The NumPy entry point: the op's C++ core on NumPy arrays, no graph and no tensors.

Importing it loads neither TensorFlow nor Keras.
"""

import numpy as np

from causal_moving_avg import _numpy_core
from causal_moving_avg._checks import (
    DTYPES,
    check_edge,
    check_not_masked,
    check_rank,
    check_window,
    dtype_error,
    resolve_axis,
)


def numpy_causal_moving_avg(a, window=3, axis=None, edge="zeros"):
    """Causal moving average of a NumPy array, with the semantics of ``causal_moving_avg``.

    Returns a new array of the input's dtype (float16, bfloat16 from ml_dtypes, float32 or
    float64) and shape, bitwise equal to the TensorFlow op's result on CPU. Any strides are
    accepted (a non-contiguous view is copied once). The GIL is released while it computes, and
    large arrays are spread over the machine's cores with bitwise-identical results.
    """
    window = check_window(window)
    edge = check_edge(edge)
    check_not_masked(a, "a")
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
        if a.dtype.kind in "iub":  # a list of Python numbers: NumPy's default float
            a = a.astype(np.float64)
    if not a.dtype.isnative:  # big-endian data: the same values in this machine's byte order
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype.name not in DTYPES:
        raise dtype_error("a", a.dtype)
    check_rank(a.ndim, "a")
    axis = resolve_axis(axis, a.ndim) % a.ndim
    return _numpy_core.causal_moving_avg(a, window, axis, edge)
