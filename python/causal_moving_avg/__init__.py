"""CausalMovingAvg: a compiled TensorFlow op for causal moving averages.

import causal_moving_avg as cma
y = cma.causal_moving_avg(x, window=3)   # == frozen causal Conv1D with weights 1/3
"""

from causal_moving_avg._api import causal_moving_avg
from causal_moving_avg._loader import build_info, library_path

__version__ = "0.1.0"
__all__ = ["causal_moving_avg", "build_info", "library_path"]
