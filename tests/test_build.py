"""What can be checked of the compiled library on any machine."""

import os
import subprocess
import sys

import tensorflow as tf
from tensorflow.python.framework import kernels

import causal_moving_avg
from conftest import DTYPE_NAMES


def test_library_path_loads_on_its_own_without_the_package():
    """What a user linking the op into their own process does: load the file by its path."""
    path = causal_moving_avg.library_path()
    assert os.path.isfile(path) and path.endswith(".so")
    script = (
        "import tensorflow as tf, sys; lib = tf.load_op_library(sys.argv[1]); "
        "print(lib.causal_moving_avg([1.0, 2.0, 3.0], window=2, axis=0).numpy().tolist())"
    )
    result = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[0.5, 1.5, 2.5]"


def test_cpu_kernels_registered_for_all_four_dtypes():
    registered = kernels.get_registered_kernels_for_op("CausalMovingAvg")
    cpu_types = {
        k.constraint[0].allowed_values.list.type[0] for k in registered.kernel if k.device_type == "CPU"
    }
    assert cpu_types == {tf.as_dtype(name).as_datatype_enum for name in DTYPE_NAMES}


def test_build_info_names_the_tensorflow_it_was_built_for():
    info = causal_moving_avg.build_info()
    assert info["tensorflow_version"] == tf.__version__
    assert set(info) >= {"cuda", "cuda_version", "cuda_architectures", "tensorflow_version"}
    assert isinstance(info["cuda_architectures"], list)
    assert info["cuda"] == bool(info["cuda_architectures"])


def test_xla_kernel_built_where_tensorflow_allows_it():
    """TensorFlow 2.20 and later ship what the XLA kernel needs; 2.19's wheel does not."""
    major, minor = (int(part) for part in tf.__version__.split(".")[:2])
    info = causal_moving_avg.build_info()
    assert info["xla"] == ((major, minor) >= (2, 20))
    assert bool(info["xla_platforms"]) == info["xla"]
