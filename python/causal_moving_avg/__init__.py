"""CausalMovingAvg: a compiled TensorFlow op for causal moving averages.

import causal_moving_avg as cma
y = cma.causal_moving_avg(x, window=3)   # == frozen causal Conv1D with weights 1/3
"""

from causal_moving_avg._api import causal_moving_avg
from causal_moving_avg._loader import build_info, library_path
from causal_moving_avg._numpy import numpy_causal_moving_avg
from causal_moving_avg.layers import CausalMovingAverage

__version__ = "0.1.0"
__all__ = [
    "CausalMovingAverage",
    "build_info",
    "causal_moving_avg",
    "library_path",
    "numpy_causal_moving_avg",
]
