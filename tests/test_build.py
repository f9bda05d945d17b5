"""What can be checked of the compiled library on any machine."""

import os
import subprocess
import sys

import pytest
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


FIRST_USES = {
    "build_info": "cma.build_info()",
    "the op": "cma.causal_moving_avg([1.0, 2.0, 3.0], window=2)",
    "the layer": "cma.CausalMovingAverage(window=2)(np.ones((1, 4, 1), np.float32))",
    "the NumPy function": "cma.numpy_causal_moving_avg([1.0, 2.0, 3.0], window=2)",
}
FIRST_USE_SCRIPT = """
import sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    {imports}
    import numpy as np
    import causal_moving_avg as cma
    {use}
print("WARNINGS:", [f"{{w.category.__name__}}: {{w.message}}" for w in caught])
"""


@pytest.mark.parametrize("first_import", ["", "import tensorflow", "import keras"])
@pytest.mark.parametrize("use", sorted(FIRST_USES))
def test_first_use_in_a_fresh_process_warns_nothing(use, first_import):
    """What a new user does first (after importing TensorFlow or Keras themselves, or not), in a
    fresh process: no warning of any kind, from us or from the frameworks we import."""
    script = FIRST_USE_SCRIPT.format(imports=first_import or "pass", use=FIRST_USES[use])
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "WARNINGS: []"
    assert "Warning" not in result.stderr, result.stderr[-3000:]
