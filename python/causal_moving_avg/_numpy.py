"""The NumPy entry point: the op's C++ core on NumPy arrays, no graph and no tensors.

Importing it loads neither TensorFlow nor Keras.
"""

import numpy as np

from causal_moving_avg import _numpy_core
from causal_moving_avg._checks import check_call, check_not_masked


def numpy_causal_moving_avg(a, window=3, axis=None, edge="zeros"):
    """Causal moving average of a NumPy array, with the semantics of ``causal_moving_avg``.

    Returns a new array of the input's dtype (float16, bfloat16 from ml_dtypes, float32 or
    float64) and shape, bitwise equal to the TensorFlow op's result on CPU. Any strides are
    accepted (a non-contiguous view is copied once). The GIL is released while it computes, and
    large arrays are spread over the machine's cores with bitwise-identical results.
    """
    check_not_masked(a, "a")
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
        if a.dtype.kind in "iub":  # a list of Python numbers: NumPy's default float
            a = a.astype(np.float64)
    if not a.dtype.isnative:  # big-endian data: the same values in this machine's byte order
        a = a.astype(a.dtype.newbyteorder("="))
    args = check_call(window, edge, axis, a.ndim, str(a.dtype), "a")
    # The core takes the axis counted from the start.
    return _numpy_core.causal_moving_avg(a, args.window, args.axis % a.ndim, args.edge)
