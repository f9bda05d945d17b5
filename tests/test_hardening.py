"""Hardening: sanitizers, property tests, hostile arguments, concurrency, leaks, huge tensors."""

import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import causal_moving_avg as cma
from conftest import DTYPE_NAMES, EDGES, reference_moving_avg, rtol

ROOT = Path(__file__).resolve().parents[1]
SANITIZE_BUILD = ROOT / "build-sanitize"
SANITIZER_REPORT = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")


def test_core_and_numpy_binding_are_clean_under_asan_and_ubsan():
    """TF-free build of the C++ core test and the NumPy binding with -fsanitize=address,undefined
    (no recovery: any report aborts), driven over T=0/1, W=1, W>T, W up to the int64 limit, one
    and many lanes, span boundaries, NaN/Inf and non-contiguous views. The driver also checks
    that this baseline build gives bitwise the installed (-O3, AVX2 version) build's results."""
    configure = [
        "cmake",
        "-S",
        str(ROOT),
        "-B",
        str(SANITIZE_BUILD),
        "-DCMA_SANITIZE=ON",
        "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
        f"-DPython3_EXECUTABLE={sys.executable}",
    ]
    if shutil.which("ccache"):
        configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    subprocess.run(configure, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(SANITIZE_BUILD), "--parallel"], check=True, capture_output=True)

    env = dict(os.environ, ASAN_OPTIONS="abort_on_error=1:detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1")
    core = subprocess.run([str(SANITIZE_BUILD / "cma_core_test")], capture_output=True, text=True, env=env)
    assert core.returncode == 0 and core.stdout.strip().endswith(" 0 failed"), (
        core.stdout[-2000:] + core.stderr
    )
    assert not any(report in core.stderr for report in SANITIZER_REPORT), core.stderr[-3000:]

    compiler = subprocess.run(
        ["c++", "-print-file-name=libasan.so"], capture_output=True, text=True, check=True
    )
    # The ASan runtime must come first in a Python process; Python's own allocations at exit are
    # not ours, so leak detection stays off there.
    env.update(LD_PRELOAD=compiler.stdout.strip(), ASAN_OPTIONS="abort_on_error=1:detect_leaks=0")
    driver = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests" / "sanitizer_driver.py"),
            str(SANITIZE_BUILD),
            str(Path(cma.__file__).parent / "_numpy_core.so"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert driver.returncode == 0 and "bitwise equal to the installed build" in driver.stdout, (
        driver.stdout[-2000:] + driver.stderr[-3000:]
    )
    assert not any(report in driver.stderr for report in SANITIZER_REPORT), driver.stderr[-3000:]


VERSION_DIGEST = """
import hashlib, sys
import ml_dtypes, numpy as np
from causal_moving_avg import _numpy_core
import causal_moving_avg as cma
digest = hashlib.sha256()
rng = np.random.default_rng(5)
for shape in [(1, 70_000, 1), (1, 200_000, 1), (3, 5000, 8), (2, 4000, 4), (2, 3000, 300), (4, 1000, 3)]:
    x = rng.standard_normal(shape) * 100
    x.flat[::7919] = np.nan
    x.flat[3::10007] = 1e-300
    # one lane packed in sequences of mean 5 and 100 steps
    packed = [np.cumsum(rng.random(shape[:2]) < rate, axis=1) for rate in (0.2, 0.01)]
    for name in _numpy_core.DTYPES:
        typed = x.astype(ml_dtypes.bfloat16 if name == "bfloat16" else name)
        for window in (1, 3, 4, 7, 32, 300, 40_000):
            for edge in _numpy_core.EDGES:
                digest.update(_numpy_core.causal_moving_avg(typed, window, 1, edge).tobytes())
                if name == "float32" and window in (3, 300):
                    digest.update(cma.causal_moving_avg(typed, window, 1, edge).numpy().tobytes())
                if shape[2] == 1 and window in (3, 300):
                    for ids in packed:
                        y = cma.numpy_causal_moving_avg(typed, window, 1, edge, segment_ids=ids)
                        digest.update(y.tobytes())
print(_numpy_core.cpu_version(), cma.build_info()["cpu_version"], digest.hexdigest())
"""


def cpu_flags():
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def test_every_cpu_version_gives_the_same_bits():
    """Each version of the CPU core this CPU can run (the x86-64 baseline, AVX2), forced in turn
    through CMA_CPU_VERSION, in the NumPy binding (packed sequences too) and the TF op: one digest
    for all."""
    from causal_moving_avg import _numpy_core

    versions = _numpy_core.CPU_VERSIONS
    assert "baseline" in versions
    if platform.machine() == "x86_64" and os.path.exists("/proc/cpuinfo"):
        flags = cpu_flags()
        assert ("avx2" in versions) == ("avx2" in flags), (versions, sorted(flags))
    digests = {}
    for version in versions:
        env = dict(os.environ, CMA_CPU_VERSION=version)
        result = subprocess.run(
            [sys.executable, "-c", VERSION_DIGEST], capture_output=True, text=True, env=env, check=True
        )
        numpy_version, op_version, digest = result.stdout.split()[-3:]
        assert numpy_version == op_version == version
        digests[version] = digest
    assert len(set(digests.values())) == 1, digests


def test_the_compiled_core_fuses_no_multiply_and_add():
    """Each operation rounds on its own, in every version of the core (the README's roundings): the
    compiler contracted no multiply and add into one, whatever CPU the build targeted."""
    if platform.machine() != "x86_64":
        pytest.skip("the versions and this check are x86-64's")
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    for library in ("_numpy_core.so", "_causal_moving_avg_ops.so"):
        listing = subprocess.run(
            [objdump, "-d", "--no-show-raw-insn", str(Path(cma.__file__).parent / library)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "vbroadcast" in listing or "vmovupd" in listing, f"{library}: no vector code disassembled"
        fused = [line for line in listing.splitlines() if re.search(r"\bvf(n?)m(add|sub)", line)]
        assert not fused, f"{library}: {len(fused)} FMA instructions, e.g. {fused[:3]}"


def numpy_dtype(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


@st.composite
def cases(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=9))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    window = draw(st.one_of(st.integers(1, 12), st.sampled_from([2**31, 2**40, 2**63 - 1])))
    edge = draw(st.sampled_from(EDGES))
    dtype = draw(st.sampled_from(DTYPE_NAMES))
    values = st.one_of(
        st.floats(-1e3, 1e3),
        st.floats(-1e-290, 1e-290),  # tiny float64, beside NaN/Inf too
        st.sampled_from([np.inf, -np.inf, np.nan, 0.0, -0.0]),
    )
    x = draw(hnp.arrays(np.float64, shape, elements=values))
    return x, axis, window, edge, dtype


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_property_matches_float64_reference(case):
    x, axis, window, edge, dtype = case
    np_dtype = numpy_dtype(dtype)
    # Casts in NumPy: TensorFlow's own casts flush subnormals to zero.
    typed = x.astype(np_dtype)
    y = cma.causal_moving_avg(typed, window=window, axis=axis, edge=edge).numpy().astype(np.float64)
    quantized = typed.astype(np.float64)
    expected = reference_moving_avg(quantized, window, axis, edge)
    scale = reference_moving_avg(np.abs(quantized), window, axis, edge)
    finite = np.isfinite(expected)
    # One rounding of the output relative to the window's magnitude, plus the running sum's error
    # relative to the largest value that passed through its span (the documented contract),
    # plus the output's own rounding where it is subnormal (the op computes with subnormals, as
    # IEEE arithmetic does, on TensorFlow's threads too).
    finite_x = np.where(np.isfinite(quantized), np.abs(quantized), 0.0)
    passed_through = np.max(finite_x, axis=axis, keepdims=True) if x.size else 0.0
    floor = float(ml_dtypes.finfo(np_dtype).smallest_subnormal)
    numpy_result = cma.numpy_causal_moving_avg(typed, window, axis, edge)
    np.testing.assert_array_equal(numpy_result.astype(np.float64), y)  # the same core, the same bits
    np.testing.assert_array_equal(y[~finite], expected[~finite])
    error = np.abs(y[finite] - expected[finite])
    bound = np.broadcast_to(rtol(dtype) * scale + floor + 2.0**-50 * passed_through, x.shape)[finite]
    assert np.all(error <= bound)


@pytest.mark.parametrize(
    "kwargs,error",
    [
        ({"window": tf.constant(3)}, TypeError),
        ({"window": np.array([3])}, TypeError),
        ({"window": -(2**70)}, ValueError),
        ({"window": 2**63}, ValueError),
        ({"axis": np.float64(1.0)}, TypeError),
        ({"axis": tf.constant(1)}, TypeError),
        ({"edge": b"zeros"}, ValueError),
        ({"edge": ["zeros"]}, ValueError),
    ],
)
def test_hostile_arguments_raise_clear_errors(kwargs, error):
    with pytest.raises(error):
        cma.causal_moving_avg(np.zeros((2, 5, 3), np.float32), **kwargs)
    with pytest.raises(error):
        cma.numpy_causal_moving_avg(np.zeros((2, 5, 3), np.float32), **kwargs)


@pytest.mark.parametrize(
    "x", [tf.constant([1, 2], tf.int32), tf.constant([1 + 2j]), tf.constant(["a"]), tf.constant([True])]
)
def test_hostile_inputs_raise_type_errors(x):
    with pytest.raises(TypeError, match="x must have dtype"):
        cma.causal_moving_avg(x)


def test_huge_window_on_a_short_sequence_allocates_nothing_extra():
    x = np.random.randn(3, 7, 2).astype(np.float32)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    y = cma.causal_moving_avg(x, window=2**40).numpy()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB
    np.testing.assert_allclose(y, np.cumsum(x.astype(np.float64), axis=1) / 2**40, rtol=1e-6)


def test_shape_mismatch_under_an_input_signature():
    f = tf.function(
        lambda t: cma.causal_moving_avg(t, 3), input_signature=[tf.TensorSpec([None, 4], tf.float32)]
    )
    with pytest.raises((TypeError, ValueError)):
        f(tf.zeros((2, 5)))
    with pytest.raises((TypeError, ValueError)):
        f(tf.zeros((2, 4), tf.float64))


def test_eight_threads_at_once_give_correct_results():
    x = np.random.randn(4, 3000, 5).astype(np.float32)
    expected = reference_moving_avg(x, 9, 1)
    graph = tf.function(lambda t: cma.causal_moving_avg(t, 9))
    calls = [
        lambda: cma.causal_moving_avg(x, 9).numpy(),
        lambda: graph(x).numpy(),
        lambda: cma.numpy_causal_moving_avg(x, 9),
    ]
    errors = []

    def work(index):
        try:
            for _ in range(20):
                np.testing.assert_allclose(calls[index % 3](), expected, rtol=1e-6, atol=1e-6)
        except Exception as error:  # noqa: BLE001 (reported below, with the thread's index)
            errors.append((index, error))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def resident_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def test_resident_memory_stays_flat_over_10000_eager_calls():
    x = tf.constant(np.random.randn(4, 256, 3).astype(np.float32))
    for _ in range(1000):  # warm-up: caches, allocator pools
        cma.causal_moving_avg(x, 5)
    before = resident_kib()
    for _ in range(10_000):
        cma.causal_moving_avg(x, 5)
    growth = resident_kib() - before
    assert growth < 8 * 1024, f"resident memory grew by {growth} KiB"  # a leak of 12 KiB/call would be 120 MB


@pytest.mark.slow
def test_more_than_2_pow_31_steps():
    """Run with `pytest -m slow` (needs about 9 GB of memory): 64-bit indexing along the steps axis."""
    steps = 2**31 + 1000
    x = np.ones(steps, np.float16)
    x[-3] = 4.0
    y = cma.causal_moving_avg(x, window=4).numpy()
    assert y[0] == np.float16(0.25) and y[2**31 + 100] == 1.0
    np.testing.assert_array_equal(y[-4:], np.array([1, 1.75, 1.75, 1.75], np.float16))
