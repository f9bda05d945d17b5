"""Builds the op library with CMake against the installed TensorFlow and ships it in the package.

Install without build isolation so the build sees the TensorFlow it must match:
    pip install --no-build-isolation .
The package then requires that TensorFlow's release series (e.g. tensorflow==2.20.* when built
against 2.20): the library links against its C++ ABI. The CMake build directory (build/, or
$CMA_BUILD_DIR) is reused between builds; ccache is used when it is on PATH. CMake options pass
through $CMA_CMAKE_ARGS (e.g. "-DCMA_CUDA=OFF").
"""

import os
import shlex
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
ISOLATED_BUILD = """
causal_moving_avg must be built against the TensorFlow it will run with, and this build cannot see
one: pip builds in an isolated environment unless told not to. Install TensorFlow (and the build
tools) where you want the op, then build there:

    pip install tensorflow cmake ninja pybind11 setuptools wheel
    pip install --no-build-isolation .
"""


def tensorflow_requirement():
    """The TensorFlow distribution this build compiles against, pinned to its release series
    (e.g. "tensorflow==2.21.*"; a CPU-only distribution keeps its own name)."""
    for distribution in ("tensorflow", "tensorflow-cpu", "tensorflow-intel"):
        try:
            version = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
        return f"{distribution}=={'.'.join(version.split('.')[:2])}.*"
    sys.exit(ISOLATED_BUILD)


class CMakeTarget(Extension):
    """A library built by a CMake target and copied into the package."""

    def __init__(self, name: str, target: str):
        super().__init__(name, sources=[])
        self.target = target


class CMakeBuild(build_ext):
    def get_ext_filename(self, fullname):
        # Plain names (no ABI tag): tf.load_op_library and library_path() find them directly.
        return os.path.join(*fullname.split(".")) + ".so"

    def run(self):
        build_dir = Path(os.environ.get("CMA_BUILD_DIR", ROOT / "build"))
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), f"-DPython3_EXECUTABLE={sys.executable}"]
        if not (build_dir / "CMakeCache.txt").exists() and shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        if shutil.which("ccache"):
            configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"]
        configure += shlex.split(os.environ.get("CMA_CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--parallel"], check=True)
        for ext in self.extensions:
            destination = Path(self.get_ext_fullpath(ext.name))
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(build_dir / f"{ext.target}.so", destination)


setup(
    name="causal_moving_avg",
    version="0.1.0",
    description="CausalMovingAvg: a compiled TensorFlow op for causal moving averages",
    long_description=(ROOT / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    # The library links against TensorFlow's C++ ABI: it runs only with the series it was built for.
    install_requires=[tensorflow_requirement(), "numpy"],
    package_dir={"": "python"},
    packages=["causal_moving_avg"],
    ext_modules=[
        CMakeTarget("causal_moving_avg._causal_moving_avg_ops", "_causal_moving_avg_ops"),
        CMakeTarget("causal_moving_avg._numpy_core", "_numpy_core"),
    ],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
