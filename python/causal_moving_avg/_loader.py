"""Loads the compiled op library once and registers the op's gradient."""

import ctypes
import json
import os
import warnings

import tensorflow as tf

_LIBRARY_FILE = "_causal_moving_avg_ops.so"


def library_path() -> str:
    """Path of the compiled op library, for loading into your own binary or serving process."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIBRARY_FILE)


def _major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _load_library():
    path = library_path()
    if not os.path.exists(path):
        raise ImportError(
            f"causal_moving_avg: the compiled library {path} is missing; install the package "
            "with `pip install --no-build-isolation .` so that CMake builds it"
        )
    try:
        module = tf.load_op_library(path)
    except tf.errors.NotFoundError as error:  # undefined symbols: built for another TensorFlow
        raise ImportError(
            f"causal_moving_avg: {path} does not load into TensorFlow {tf.__version__} ({error}). "
            "Rebuild it against this TensorFlow: `pip install --no-build-isolation --force-reinstall .`"
        ) from error
    # The library is already loaded, so this maps the same handle and runs no registration twice.
    info = json.loads(_build_info_json(path))
    if _major_minor(info["tensorflow_version"]) != _major_minor(tf.__version__):
        raise ImportError(
            f"causal_moving_avg was built for TensorFlow {info['tensorflow_version']} but "
            f"TensorFlow {tf.__version__} is installed; the C++ ABI differs between releases. "
            "Rebuild: `pip install --no-build-isolation --force-reinstall .`"
        )
    for failure in info["xla_registration_failures"]:
        warnings.warn(
            f"causal_moving_avg: the XLA handler for {failure}; the op runs eagerly and in "
            "tf.function, but fails to compile under jit_compile on that platform",
            RuntimeWarning,
            stacklevel=3,
        )
    return module, info


def _build_info_json(path: str) -> str:
    build_info = ctypes.CDLL(path).CausalMovingAvgBuildInfo
    build_info.restype = ctypes.c_char_p
    return build_info().decode()


ops, _BUILD_INFO = _load_library()


@tf.RegisterGradient("CausalMovingAvg")
def _causal_moving_avg_gradient(op, grad):  # noqa: ARG001 (TensorFlow's signature)
    """A constant to autodiff, like tf.stop_gradient: no gradient flows through the op."""
    return [None]


@tf.RegisterGradient("CausalMovingAvgSegments")
def _causal_moving_avg_segments_gradient(op, grad):  # noqa: ARG001
    """No gradient for x (ids have none)."""
    return [None, None]


@tf.RegisterGradient("CausalMovingAvgStream")
def _causal_moving_avg_stream_gradient(op, *grads):  # noqa: ARG001
    """No gradient for x, the state's history or its step count either."""
    return [None, None, None]


def build_info() -> dict:
    """What the loaded library was built with.

    Keys: ``cuda`` (GPU kernels compiled in), ``cuda_version`` (the CUDA the kernels were built
    with, e.g. ``"12.5"``), ``cuda_minimum_driver`` (the oldest NVIDIA driver that runs them, e.g.
    ``525``), ``cuda_compiler``, ``cuda_architectures`` (list such as ``"sm_90"`` for real code
    and ``"compute_90"`` for PTX), ``cuda_runtime`` (``"tensorflow"``: the kernels call the CUDA
    runtime TensorFlow loads; ``"static-private"``: a runtime linked into the library),
    ``tensorflow_version`` (the TensorFlow the library was built against),
    ``cpu_version`` (the version of the CPU core in use: ``"avx2"`` or ``"baseline"``),
    ``xla`` (the XLA kernel is built in: the op runs inside ``jit_compile=True``; TensorFlow
    releases whose wheel lacks what it needs build without it), ``xla_platforms`` (the XLA
    platforms whose handler registered when the library loaded: ``"Host"``, and ``"CUDA"`` with
    the GPU kernels) and ``xla_registration_failures``.
    """
    architectures = [a for a in _BUILD_INFO["cuda_architectures"].split(",") if a]
    return {
        "cuda": bool(architectures),
        "cuda_version": _BUILD_INFO["cuda_version"] or None,
        "cuda_minimum_driver": _BUILD_INFO["cuda_minimum_driver"] or None,
        "cuda_compiler": _BUILD_INFO["cuda_compiler"] or None,
        "cuda_architectures": architectures,
        "cuda_runtime": _BUILD_INFO["cuda_runtime"] or None,
        "tensorflow_version": _BUILD_INFO["tensorflow_version"],
        "cpu_version": _BUILD_INFO["cpu_version"],
        "xla": _BUILD_INFO["xla_kernel"],
        "xla_platforms": list(_BUILD_INFO["xla_platforms"]),
        "xla_registration_failures": list(_BUILD_INFO["xla_registration_failures"]),
    }
