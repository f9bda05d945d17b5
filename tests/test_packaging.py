"""Packaging: the binary wheel in a fresh environment holding only TensorFlow, the isolated build
that must not fetch a second TensorFlow, and a build against an older TensorFlow release."""

import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import tensorflow as tf

ROOT = Path(__file__).resolve().parents[1]
# The previous release series; its wheel is fetched once and then comes from pip's cache.
OLDER_TENSORFLOW = "2.20"

SMOKE = """
import os, sys, tempfile
import numpy as np, tensorflow as tf, keras
import causal_moving_avg as cma
assert os.path.dirname(cma.__file__).startswith(sys.prefix), cma.__file__  # the installed copy
x = np.random.default_rng(0).standard_normal((3, 500, 4)).astype(np.float32)
x[1, 100, 2] = np.nan
expected = np.stack([np.convolve(x[i, :, c].astype(np.float64), np.ones(5) / 5)[:500]
                     for i in range(3) for c in range(4)]).reshape(3, 4, 500).transpose(0, 2, 1)
eager = cma.causal_moving_avg(x, 5).numpy()
finite = np.isfinite(expected)
assert np.array_equal(np.isfinite(eager), finite)
assert np.allclose(eager[finite], expected[finite], rtol=1e-6, atol=1e-6)
assert np.array_equal(cma.numpy_causal_moving_avg(x, 5), eager, equal_nan=True)
if cma.build_info()["xla"]:
    jit = tf.function(lambda t: cma.causal_moving_avg(t, 5), jit_compile=True)(x).numpy()
    assert np.array_equal(jit, eager, equal_nan=True)
model = keras.Sequential([keras.Input((500, 4)), cma.CausalMovingAverage(window=5)])
assert np.array_equal(model.predict(x, verbose=0), eager, equal_nan=True)
module = tf.Module()
module.f = tf.function(lambda t: cma.causal_moving_avg(t, 5),
                       input_signature=[tf.TensorSpec([None, None, 4], tf.float32)])
path = os.path.join(tempfile.mkdtemp(), "saved")
tf.saved_model.save(module, path)
assert np.array_equal(tf.saved_model.load(path).f(x).numpy(), eager, equal_nan=True)
print("smoke ok", tf.__version__, cma.build_info()["xla"])
"""


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, (command, result.stdout[-3000:], result.stderr[-3000:])
    return result


def fresh_venv(path):
    run([sys.executable, "-m", "venv", str(path)])
    python = path / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    return python


def build_environment():
    # The build tools (cmake, ninja) of the environment running the tests, as scripts/run does.
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


# The oldest platform the wheel can claim when built here (Debian 12, GCC 12): glibc 2.34 for the
# C++ runtime's own references (pthread_once, __libc_single_threaded) and pybind11's use of
# exception_ptr (CXXABI_1.3.13). README says which distributions that is.
WHEEL_PLATFORM = "manylinux_2_34_x86_64"


def test_wheel_is_manylinux_installs_and_runs_in_a_fresh_environment_with_only_tensorflow(tmp_path):
    """scripts/run wheel's build: a manylinux tag auditwheel agrees with, TensorFlow's libraries
    not grafted in; then installed where only TensorFlow is (no CUDA libraries either)."""
    dist = tmp_path / "dist"
    run([sys.executable, str(ROOT / "scripts" / "build_wheel.py"), str(dist)], env=build_environment())
    (wheel,) = dist.glob("causal_moving_avg-*.whl")
    assert wheel.name.endswith(f"-{WHEEL_PLATFORM}.whl"), wheel.name
    auditwheel = Path(sys.executable).parent / "auditwheel"
    verdict = run([str(auditwheel), "show", str(wheel)], env=build_environment()).stdout
    assert f'platform tag to "{WHEEL_PLATFORM}"' in " ".join(verdict.split())
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert not [n for n in names if ".libs/" in n], "nothing grafted: TensorFlow is a dependency"
    assert {"causal_moving_avg/_causal_moving_avg_ops.so", "causal_moving_avg/_numpy_core.so"} <= set(names)
    python = fresh_venv(tmp_path / "venv")
    run([str(python), "-m", "pip", "install", "--quiet", str(wheel)])  # pulls its TensorFlow
    series = ".".join(tf.__version__.split(".")[:2])
    installed = run([str(python), "-m", "pip", "show", "tensorflow"]).stdout
    assert f"Version: {series}." in installed
    packages = run([str(python), "-m", "pip", "list", "--format=freeze"]).stdout.lower()
    assert "nvidia-cuda-runtime" not in packages  # the library loads with no CUDA runtime at all
    result = run([str(python), "-c", SMOKE], cwd=tmp_path)  # not the source tree
    assert f"smoke ok {tf.__version__} True" in result.stdout


def test_isolated_build_stops_at_once_naming_the_command(tmp_path):
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "pip install --no-build-isolation ." in output
    assert "Collecting tensorflow" not in output and "Downloading tensorflow" not in output
    assert time.monotonic() - start < 300


def test_builds_and_runs_against_an_older_tensorflow(tmp_path):
    """A CPU-only build against the previous release series, in its own environment: the
    package pins that series, and the op, the NumPy function, the layer, XLA and a SavedModel
    work there."""
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "build-*", "dist", "*.so", "__pycache__", "*.egg-info"
        ),
    )
    python = fresh_venv(tmp_path / "venv")
    tools = ["pybind11>=2.12", "setuptools>=68", "wheel", "cmake>=3.25", "ninja"]
    run([str(python), "-m", "pip", "install", "--quiet", f"tensorflow=={OLDER_TENSORFLOW}.*", *tools])
    env = dict(
        os.environ,
        PATH=f"{python.parent}{os.pathsep}{os.environ['PATH']}",
        CMA_BUILD_DIR=str(tmp_path / "build"),
        CMA_CMAKE_ARGS="-DCMA_CUDA=OFF",
    )
    run([str(python), "-m", "pip", "install", "--quiet", "--no-build-isolation", str(source)], env=env)
    requires = run([str(python), "-m", "pip", "show", "causal_moving_avg"]).stdout
    assert "tensorflow" in requires
    metadata = next(
        (tmp_path / "venv").glob("lib/python*/site-packages/causal_moving_avg-*.dist-info/METADATA")
    )
    assert f"Requires-Dist: tensorflow=={OLDER_TENSORFLOW}.*" in metadata.read_text()
    result = run([str(python), "-c", SMOKE], cwd=tmp_path)
    assert f"smoke ok {OLDER_TENSORFLOW}." in result.stdout and result.stdout.strip().endswith("True")
