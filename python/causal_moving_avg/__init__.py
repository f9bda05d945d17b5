"""CausalMovingAvg: a compiled TensorFlow op for causal moving averages.

import causal_moving_avg as cma
y = cma.causal_moving_avg(x, window=3)   # == frozen causal Conv1D with weights 1/3

Importing the package loads neither TensorFlow nor Keras, so the NumPy function costs no
TensorFlow import. The rest loads on first use, and as soon as TensorFlow (or Keras) is imported,
whether before or after this package: the op library then registers the op (graphs, SavedModels
and XLA programs holding it run) and the layer registers with Keras (`.keras` files holding it
load without custom_objects).
"""

import importlib
import importlib.abc
import sys
import warnings

from causal_moving_avg._history import StreamState
from causal_moving_avg._numpy import numpy_causal_moving_avg, numpy_stream_state

__version__ = "0.1.0"
__all__ = [
    "CausalMovingAverage",
    "StreamState",
    "build_info",
    "causal_moving_avg",
    "library_path",
    "numpy_causal_moving_avg",
    "numpy_stream_state",
    "stream_state",
]

# Names whose modules import TensorFlow (and, for the layer, Keras), loaded on first access.
_LAZY = {
    "causal_moving_avg": "causal_moving_avg._api",
    "stream_state": "causal_moving_avg._api",
    "build_info": "causal_moving_avg._loader",
    "library_path": "causal_moving_avg._loader",
    "CausalMovingAverage": "causal_moving_avg.layers",
}

# What to import once a framework is: TensorFlow needs the op library loaded, Keras the layer.
_COMPANIONS = {"tensorflow": "causal_moving_avg._loader", "keras": "causal_moving_avg.layers"}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'causal_moving_avg' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


def _import_companion(framework):
    try:
        importlib.import_module(_COMPANIONS[framework])
    except Exception as error:  # noqa: BLE001 (importing the framework must not fail because of us)
        warnings.warn(
            f"causal_moving_avg: not ready for {framework} ({error}); using the op will raise again",
            RuntimeWarning,
            stacklevel=2,
        )


class _CompanionLoader(importlib.abc.Loader):
    """The framework's own loader, then its companion import."""

    def __init__(self, loader, framework):
        self._loader, self._framework = loader, framework

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _import_companion(self._framework)

    def __getattr__(self, name):  # anything else (resource readers, ...) is the loader's
        return getattr(self._loader, name)


class _CompanionFinder(importlib.abc.MetaPathFinder):
    """Finds a framework as the other finders do, with a loader that imports its companion."""

    def find_spec(self, name, path=None, target=None):
        if name not in _COMPANIONS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _CompanionLoader(spec.loader, name)
                return spec
        return None


for _framework in _COMPANIONS:
    if _framework in sys.modules:
        _import_companion(_framework)
if not all(framework in sys.modules for framework in _COMPANIONS):
    sys.meta_path.insert(0, _CompanionFinder())
