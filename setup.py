"""Builds the op library with CMake against the installed TensorFlow and ships it in the package.

Install without build isolation so the build sees the TensorFlow it must match:
    pip install --no-build-isolation .
The CMake build directory (build/, or $CMA_BUILD_DIR) is reused between builds; ccache is used
when it is on PATH. CMake options pass through $CMA_CMAKE_ARGS (e.g. "-DCMA_CUDA=OFF").
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


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
    # The library links against TensorFlow's C++ ABI: it runs only with the 2.21 series.
    install_requires=["tensorflow>=2.21,<2.22", "numpy"],
    package_dir={"": "python"},
    packages=["causal_moving_avg"],
    ext_modules=[
        CMakeTarget("causal_moving_avg._causal_moving_avg_ops", "_causal_moving_avg_ops"),
        CMakeTarget("causal_moving_avg._numpy_core", "_numpy_core"),
    ],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
