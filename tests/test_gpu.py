"""The CUDA side: what can be checked without a GPU is checked here; running the op on a GPU
is checked where one is present (and skipped, saying so, where not)."""

import importlib.util
import itertools
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import kernels

import causal_moving_avg
from conftest import DTYPE_NAMES, EDGES, reference_moving_avg, rtol

ROOT = Path(__file__).resolve().parents[1]
BUILD_DIR = Path(os.environ.get("CMA_BUILD_DIR", ROOT / "build"))
# The default build compiles the kernels when clang-19 and CUDA 12 from PyPI are here (the
# set-up installs both where it can).
CUDA_TOOLCHAIN_PRESENT = bool(shutil.which("clang++-19")) and all(
    importlib.util.find_spec(f"nvidia.{name}") for name in ("cuda_nvcc", "cuda_runtime", "cuda_cccl")
)
GPUS = tf.config.list_physical_devices("GPU")

needs_cuda_build = pytest.mark.skipif(
    not CUDA_TOOLCHAIN_PRESENT,
    reason="no clang-19 or no CUDA 12 packages on this machine, so the library was built CPU-only",
)
needs_gpu = pytest.mark.skipif(not GPUS, reason="no GPU visible to TensorFlow on this machine")


@needs_cuda_build
def test_cuda_compiled_in_with_tensorflows_cuda_generation():
    """Built with TensorFlow's CUDA (12.x for TF 2.21), calling TensorFlow's CUDA runtime, so the
    kernels need the driver TensorFlow needs."""
    info = causal_moving_avg.build_info()
    tf_cuda = tf.sysconfig.get_build_info()["cuda_version"]
    assert info["cuda"] is True
    assert info["cuda_version"].split(".")[0] == tf_cuda.split(".")[0] == "12"
    assert info["cuda_minimum_driver"] == 525
    assert info["cuda_compiler"].startswith("clang 19.")
    assert info["cuda_runtime"] == "tensorflow"


@needs_cuda_build
def test_gpu_kernels_registered_for_all_four_dtypes():
    registered = kernels.get_registered_kernels_for_op("CausalMovingAvg")
    gpu_types = {
        k.constraint[0].allowed_values.list.type[0] for k in registered.kernel if k.device_type == "GPU"
    }
    assert gpu_types == {tf.as_dtype(name).as_datatype_enum for name in DTYPE_NAMES}


@needs_cuda_build
def test_gpu_kernels_of_every_op_registered_and_ids_int64_only_on_the_gpu():
    # TensorFlow keeps the int32 inputs of GPU kernels in host memory: the GPU kernel of packed
    # sequences takes int64 ids only, which it reads on the device.
    dtypes = {tf.as_dtype(name).as_datatype_enum for name in DTYPE_NAMES}
    for op in ("CausalMovingAvgStream", "CausalMovingAvgSegments"):
        gpu = [k for k in kernels.get_registered_kernels_for_op(op).kernel if k.device_type == "GPU"]
        found = {c.allowed_values.list.type[0] for k in gpu for c in k.constraint if c.name == "T"}
        assert found == dtypes, op
    segments = [k for k in kernels.get_registered_kernels_for_op("CausalMovingAvgSegments").kernel]
    for kernel in segments:
        ids = [list(c.allowed_values.list.type) for c in kernel.constraint if c.name == "Tids"]
        expected = (
            [tf.int64.as_datatype_enum]
            if kernel.device_type == "GPU"
            else [tf.int32.as_datatype_enum, tf.int64.as_datatype_enum]
        )
        assert ids == [expected], kernel.device_type


def cuobjdump():
    found = shutil.which("cuobjdump")
    if found:
        return found
    import nvidia

    for package in nvidia.__path__:
        candidates = sorted(Path(package).glob("*/bin/cuobjdump"))
        if candidates:
            return str(candidates[0])
    pytest.fail("cuobjdump not found: install nvidia-cuda-cuobjdump (requirements-dev.txt)")


def cuobjdump_in(folder, *arguments):
    return subprocess.run(
        [cuobjdump(), *arguments], cwd=folder, capture_output=True, text=True, check=True
    ).stdout


def built_architectures():
    """What the build was asked for (CMake's list, as build_info reports it)."""
    architectures = causal_moving_avg.build_info()["cuda_architectures"]
    assert architectures, "a CUDA build names its architectures"
    return architectures


@needs_cuda_build
def test_binary_holds_code_for_the_built_architectures():
    """cuobjdump reads the fat binary itself: real code for each sm_*, PTX for each compute_*."""
    path = causal_moving_avg.library_path()
    elf = subprocess.run([cuobjdump(), "--list-elf", path], capture_output=True, text=True, check=True)
    ptx = subprocess.run([cuobjdump(), "--list-ptx", path], capture_output=True, text=True, check=True)
    real = sorted({line.rsplit(".", 2)[-2] for line in elf.stdout.splitlines() if line.endswith(".cubin")})
    virtual = sorted(
        {
            "compute_" + line.rsplit(".", 2)[-2][3:]
            for line in ptx.stdout.splitlines()
            if line.endswith(".ptx")
        }
    )
    assert sorted(real + virtual) == sorted(built_architectures())
    assert any(a.startswith("compute_") for a in virtual), "PTX for GPUs newer than the build"


@needs_cuda_build
def test_binary_covers_tensorflows_architectures_with_ptx_its_driver_jits():
    """Real code for every architecture TensorFlow's own wheel holds (and PTX for the newest), in
    a PTX ISA the CUDA 12.5 driver compiles (8.5 or older), as cuobjdump reads the binary."""
    ours = set(built_architectures())
    theirs = set(tf.sysconfig.get_build_info()["cuda_compute_capabilities"])
    assert {"sm_70", "sm_80", "sm_89"} <= theirs  # what TF 2.21 lists (sm_60 too; compute_90)
    assert {a.replace("compute_", "sm_") for a in theirs} <= ours
    assert {a for a in theirs if a.startswith("compute_")} <= ours
    ptx = cuobjdump_in(ROOT, "--dump-ptx", causal_moving_avg.library_path())
    versions = {tuple(map(int, v)) for v in re.findall(r"^\.version (\d+)\.(\d+)", ptx, re.MULTILINE)}
    assert versions and max(versions) <= (8, 5), versions


@needs_cuda_build
def test_every_architecture_holds_every_kernel_for_every_dtype():
    """The three kernels (direct, tile scan in two passes, running) and a stream's three copies
    (its stage, its head outputs, its next state) for the four dtypes, in the real code of each
    default architecture: read from the fat binary by cuobjdump."""
    usage = subprocess.run(
        [cuobjdump(), "--dump-resource-usage", causal_moving_avg.library_path()],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = {}
    arch = None
    for line in usage.splitlines():
        if match := re.search(r"arch = (sm_\d+)", line):
            arch = match.group(1)
        elif match := re.search(
            r"Function _ZN17causal_moving_avg\d+(\w+?Kernel)I(f|d|6__half|13__nv_bfloat16)E", line
        ):
            found.setdefault(arch, set()).add(match.groups())
    dtypes = {"f", "d", "6__half", "13__nv_bfloat16"}
    names = {
        "DirectMeanKernel",
        "TileSumsKernel",
        "TileMeansKernel",
        "RunningMeanUnitsKernel",
        "StageInputsKernel",
        "HeadOutputsKernel",
        "NextHistoryKernel",
    }
    expected = {(name, dtype) for name in names for dtype in dtypes}
    assert sorted(found) == sorted(a for a in built_architectures() if a.startswith("sm_"))
    for arch, kernels_found in found.items():
        assert kernels_found == expected, (arch, sorted(expected - kernels_found))


@needs_cuda_build
def test_xla_cuda_handler_compiled_in_and_registered():
    """Registered with XLA's FFI registry when the library loaded (no GPU needed for that)."""
    info = causal_moving_avg.build_info()
    assert sorted(info["xla_platforms"]) == (["CUDA", "Host"] if info["xla"] else [])
    assert info["xla_registration_failures"] == []
    symbols = subprocess.run(
        ["nm", "-C", causal_moving_avg.library_path()], capture_output=True, text=True, check=True
    ).stdout
    assert ("causal_moving_avg::(anonymous namespace)::CudaCall(" in symbols) == info["xla"]


# What TensorFlow's own CUDA runtime filled: a cudaDeviceProp (or anything read from one) crossing
# into our code is laid out by TensorFlow's CUDA version, not by the one our files compile against.
TF_FILLED_DEVICE_PROPERTIES = re.compile(
    r"getNumGpuMultiProcessors|deviceProperties\s*\(|cudaDeviceProp|cudaGetDeviceProperties|"
    r"gpu_device_info|GetDeviceDescription|device_description"
)


def test_tensorflow_glue_never_reads_device_properties_tensorflow_filled():
    """The TF GPU kernel and the XLA handlers ask our own CUDA runtime about the device (through
    the core's PrepareCurrentGpu); a struct TensorFlow filled with another CUDA version's layout
    gave them a wrong multiprocessor count once."""
    glue = sorted((ROOT / "cc" / "kernels").glob("*")) + sorted((ROOT / "cc" / "xla").glob("*"))
    assert glue, "the TF glue files were not found"
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in glue
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if TF_FILLED_DEVICE_PROPERTIES.search(line.split("//")[0])  # code, not comments
    ]
    assert offenders == []
    launcher = (ROOT / "cc" / "core" / "gpu_device.cc").read_text()
    assert "cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount" in launcher


def dynamic_symbols(path, *flags):
    listed = subprocess.run(["nm", "-D", *flags, str(path)], capture_output=True, text=True, check=True)
    return {line.split()[-1].split("@")[0] for line in listed.stdout.splitlines() if line.strip()}


@needs_cuda_build
def test_kernels_call_tensorflows_cuda_runtime_and_need_no_cuda_library_to_load():
    """No libcudart or libcuda in NEEDED: every CUDA runtime function the library calls is one
    TensorFlow's framework library exports (it loads libcudart.so.12 when it looks for a GPU),
    and the library exports none itself."""
    path = causal_moving_avg.library_path()
    dynamic = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic))
    tensorflow = {"libtensorflow_framework.so.2", "libtensorflow_cc.so.2"}
    system = {"libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6"}
    assert tensorflow <= needed <= tensorflow | system, needed
    called = {s for s in dynamic_symbols(path, "--undefined-only") if s.startswith(("cuda", "__cuda"))}
    assert {"cudaLaunchKernel", "__cudaRegisterFatBinary", "cudaGetDevice"} <= called
    framework = Path(tf.sysconfig.get_lib()) / "libtensorflow_framework.so.2"
    assert called <= dynamic_symbols(framework, "--defined-only")
    assert not [s for s in dynamic_symbols(path, "--defined-only") if s.startswith("cuda")]


# A PTX module without comments or indentation, which NVIDIA's fatbinary embeds unchanged.
SMALL_PTX = b".version 8.5\n.target sm_80\n.address_size 64\n\n.visible .entry f()\n{\nret;\n}\n"


def nvidia_fatbinary():
    found = shutil.which("fatbinary") or "/usr/local/cuda/bin/fatbinary"
    return found if Path(found).exists() else None


def write_fatbin_of_library_cubin(folder, arch):
    """The library's cubin for `arch` and SMALL_PTX (for sm_80) bundled by cmake/fatbinary.py:
    returns the cubin's path, the fatbin's and the PTX's."""
    ptx = folder / "k.ptx"
    ptx.write_bytes(SMALL_PTX)
    cuobjdump_in(folder, "--extract-elf", arch, causal_moving_avg.library_path())
    (cubin,) = folder.glob(f"*.{arch}.cubin")
    fatbin = folder / "ours.fatbin"
    images = [f"--image=profile={arch},file={cubin}", f"--image=profile=compute_80,file={ptx}"]
    writer = ROOT / "cmake" / "fatbinary.py"
    subprocess.run([sys.executable, writer, "-64", "--create", fatbin, *images], check=True)
    return cubin, fatbin, ptx


@needs_cuda_build
def test_fatbinary_writer_reads_back_with_cuobjdump(tmp_path):
    """cmake/fatbinary.py (the CUDA 12 packages have no fatbinary): cuobjdump lists and extracts
    what it wrote, byte for byte."""
    cubin, fatbin, _ = write_fatbin_of_library_cubin(tmp_path, "sm_70")
    data = fatbin.read_bytes()
    magic, version, header, size = struct.unpack_from("<IHHQ", data)
    assert (magic, version, header, size) == (0xBA55ED50, 1, 16, len(data) - 16)
    listed = cuobjdump_in(tmp_path, "--list-elf", fatbin) + cuobjdump_in(tmp_path, "--list-ptx", fatbin)
    assert "sm_70.cubin" in listed and "sm_80.ptx" in listed, listed
    out = tmp_path / "out"
    out.mkdir()
    cuobjdump_in(out, "--extract-elf", "all", fatbin)
    assert [p.read_bytes() for p in out.glob("*.cubin")] == [cubin.read_bytes()]


@needs_cuda_build
@pytest.mark.skipif(nvidia_fatbinary() is None, reason="no NVIDIA fatbinary on this machine to compare with")
def test_fatbinary_writer_matches_nvidias_tool_byte_for_byte(tmp_path):
    cubin, ours, ptx = write_fatbin_of_library_cubin(tmp_path, "sm_90")
    theirs = tmp_path / "theirs.fatbin"
    subprocess.run(
        [nvidia_fatbinary(), "--compress=false", "-64", "--create", theirs]
        + [f"--image3=kind=elf,sm=90,file={cubin}", f"--image3=kind=ptx,sm=80,file={ptx}"],
        check=True,
    )
    assert ours.read_bytes() == theirs.read_bytes()


@needs_cuda_build
def test_gpu_harness_runs_and_skips_cleanly_without_a_gpu():
    harness = BUILD_DIR / "cma_gpu_harness"
    assert harness.exists(), f"{harness} was not built"
    result = subprocess.run([str(harness), "--quick"], capture_output=True, text=True, timeout=600)
    if GPUS:
        assert result.returncode == 0, result.stdout + result.stderr
        assert " 0 failed" in result.stdout
    else:
        assert result.returncode == 77 and "SKIP: no CUDA device" in result.stdout


@needs_cuda_build
def test_launcher_entry_point_for_other_runtimes_streams_is_built():
    """scripts/gpu_stream_check.py (run by scripts/gpu_check on a GPU machine) launches the
    kernels on CuPy's and PyTorch's streams through this library: its two entry points are
    exported, its CUDA runtime is not, and without a GPU the script says it skips."""
    library = BUILD_DIR / "libcma_gpu_launch.so"
    assert library.exists(), f"{library} was not built"
    exported = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert {"CausalMovingAvgGpuLaunch", "CausalMovingAvgGpuScratchBytes"} <= set(exported)
    assert not [s for s in exported if s.startswith("cuda")]
    script = ROOT / "scripts" / "gpu_stream_check.py"
    result = subprocess.run([sys.executable, str(script), str(library)], capture_output=True, text=True)
    if GPUS:
        assert result.returncode in (0, 77), result.stdout + result.stderr
    else:
        assert result.returncode == 77 and "SKIP" in result.stdout, result.stdout + result.stderr


def test_core_cpp_tests_pass():
    """The TF-free C++ test of the core (CPU plan, GPU plans, direct sums and the GPU's tile scans
    through their host emulation, run on the host)."""
    binary = BUILD_DIR / "cma_core_test"
    assert binary.exists(), f"{binary} was not built"
    result = subprocess.run([str(binary)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.strip().endswith(" 0 failed")


def test_core_cpp_test_cases_run_by_name():
    """The C++ core test's cases are named and run alone: --list names them, --filter runs only
    those it names, and a filter that names no case is an error."""
    binary = BUILD_DIR / "cma_core_test"
    assert binary.exists(), f"{binary} was not built"
    listed = subprocess.run([str(binary), "--list"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    names = listed.stdout.split()
    assert {"driver_problem", "gpu_launch_sizes", "host_bfloat16"} <= set(names)
    assert any(name.startswith("reference/float64/partial/") for name in names)
    assert len(names) == len(set(names))

    subset = subprocess.run(
        [str(binary), "--filter", "driver_problem", "--filter", "gpu_launch_sizes"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert subset.returncode == 0, subset.stdout[-3000:]
    # One check each: only the two cases ran.
    assert subset.stdout.strip().splitlines()[-1] == "2 passed, 0 failed"

    unknown = subprocess.run(
        [str(binary), "--filter", "no_such_case"], capture_output=True, text=True, timeout=60
    )
    assert unknown.returncode == 2 and "no_such_case" in unknown.stderr


@needs_gpu
@pytest.mark.parametrize("dtype", [tf.as_dtype(name) for name in DTYPE_NAMES])
def test_gpu_matches_reference(dtype):
    # The GPU sums in another order (tile scans), so its last bit may round the other way.
    tolerance = 2 * rtol(dtype)
    layouts = [((1, 100_000), 1), ((4, 3000, 3), 1), ((2, 500, 64), 1), ((300, 2, 5), 0)]
    for (shape, axis), window, edge in itertools.product(layouts, [1, 3, 32, 33, 1000, 5000], EDGES):
        x = np.random.randn(*shape) * 10
        x.flat[::997] = np.inf
        x.flat[5::1999] = np.nan
        with tf.device("/GPU:0"):
            y = causal_moving_avg.causal_moving_avg(
                tf.constant(x, dtype), window=window, axis=axis, edge=edge
            )
        assert "GPU" in y.device
        quantized = tf.cast(tf.constant(x, dtype), tf.float64).numpy()
        expected = reference_moving_avg(quantized, window, axis, edge)
        scale = reference_moving_avg(np.abs(quantized), window, axis, edge)
        got = tf.cast(y, tf.float64).numpy()
        finite = np.isfinite(expected)
        np.testing.assert_array_equal(got[~finite], expected[~finite])  # NaN and Inf in place
        assert np.all(np.abs(got[finite] - expected[finite]) <= tolerance * scale[finite]), (
            shape,
            window,
            edge,
        )


@needs_gpu
@pytest.mark.skipif(not causal_moving_avg.build_info()["xla"], reason="this build has no XLA kernel")
@pytest.mark.parametrize("dtype", [tf.as_dtype(name) for name in DTYPE_NAMES])
def test_jit_compile_on_the_gpu_gives_the_gpu_kernels_bits(dtype):
    """Under XLA on a GPU, the CUDA handler launches the same kernels as the TF GPU kernel."""
    x = np.random.randn(3, 3000, 5) * 10
    x.flat[::997] = np.inf
    for window, edge in itertools.product([1, 3, 32, 1000, 5000], EDGES):
        with tf.device("/GPU:0"):
            tensor = tf.constant(x, dtype)
            eager = causal_moving_avg.causal_moving_avg(tensor, window=window, edge=edge)
            compiled = tf.function(
                lambda t, w=window, e=edge: causal_moving_avg.causal_moving_avg(t, window=w, edge=e),
                jit_compile=True,
            )(tensor)
        assert "GPU" in compiled.device
        np.testing.assert_array_equal(
            tf.cast(compiled, tf.float64).numpy(),
            tf.cast(eager, tf.float64).numpy(),
            err_msg=f"{window} {edge}",
        )
