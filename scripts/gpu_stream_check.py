"""The GPU kernels launched on streams that other CUDA runtimes created (CuPy's, PyTorch's), as
TensorFlow's and XLA's streams are (TensorFlow uses its own CUDA 12 runtime; the library embeds
the toolkit's). Needs a GPU and CuPy or PyTorch, not TensorFlow:

    python scripts/gpu_stream_check.py [build/libcma_gpu_launch.so]

Each case runs on a fresh non-default stream of the other runtime, with the output poisoned, then
is compared with a float64 NumPy reference after that stream alone is synchronised, and bit for bit
with the same call on the default stream. Prints one line
per runtime and exits 1 on any failure, 77 when no GPU or neither runtime is present.
"""

import ctypes
import sys
from pathlib import Path

import numpy as np

LIBRARY = Path(
    sys.argv[1]
    if len(sys.argv) > 1
    else Path(__file__).resolve().parents[1] / "build" / "libcma_gpu_launch.so"
)
DTYPES = {np.float16: 0, np.float32: 2, np.float64: 3}  # cc/core/types.h's enumerators
TOLERANCE = {np.float16: 2e-3, np.float32: 4e-7, np.float64: 1e-13}
# Layouts for each kernel: direct (narrow, short window), tile scan (narrow, long), running (wide).
CASES = [((1, 1 << 20, 1), 3), ((4, 50_000, 3), 1000), ((3, 2000, 64), 33), ((2, 30_000, 1), 70_000)]


def reference(x, window):
    # Prefix sums in x86's 80-bit long double: a float64 prefix difference over a million
    # steps is about 1e-11 of the window's magnitude off, above float64's tolerance.
    x = x.astype(np.longdouble)
    prefix = np.concatenate([np.zeros_like(x[:, :1]), np.cumsum(x, axis=1)], axis=1)
    steps = x.shape[1]
    ends = np.arange(1, steps + 1)
    return ((prefix[:, ends] - prefix[:, np.maximum(ends - window, 0)]) / window).astype(np.float64)


def check(name, to_device, to_host, empty, stream_of, synchronize, device_synchronize, launch):
    failures = 0
    rng = np.random.default_rng(0)
    for (outer, steps, inner), window in CASES:
        for dtype, code in DTYPES.items():
            x = (rng.standard_normal((outer, steps, inner)) * 10).astype(dtype)
            stream = stream_of()
            dx = to_device(x)
            dy = to_device(np.full_like(x, np.nan))  # poisoned: an unwritten output shows
            scratch_bytes = lib.CausalMovingAvgGpuScratchBytes(code, outer, steps, inner, window)
            scratch = empty(max(1, scratch_bytes))
            device_synchronize()  # the inputs are ready; the launch is then the stream's only work
            status = launch(code, stream, (outer, steps, inner), window, dx, dy, scratch)
            synchronize(stream)
            y_bits = to_host(dy)
            # The same call on the default stream of the library's own runtime: the same bits.
            dy0 = to_device(np.full_like(x, np.nan))
            device_synchronize()
            status0 = launch(code, None, (outer, steps, inner), window, dx, dy0, scratch)
            device_synchronize()
            same_bits = to_host(dy0).tobytes() == y_bits.tobytes()
            y = y_bits.astype(np.float64)
            expected = reference(x, window)
            scale = reference(np.abs(x), window)
            close = np.all(np.abs(y - expected) <= TOLERANCE[dtype] * scale + 1e-30)
            if status != 0 or status0 != 0 or not close or not same_bits:
                failures += 1
                print(
                    f"FAIL {name} {dtype.__name__} [{outer},{steps},{inner}] W={window} "
                    f"status={status}/{status0} close={close} same_bits={same_bits}"
                )
    print(f"{name}: {len(CASES) * len(DTYPES) - failures} passed, {failures} failed")
    return failures


lib = ctypes.CDLL(str(LIBRARY))
lib.CausalMovingAvgGpuScratchBytes.restype = ctypes.c_int64
lib.CausalMovingAvgGpuScratchBytes.argtypes = [ctypes.c_int] + [ctypes.c_int64] * 4
lib.CausalMovingAvgGpuLaunch.restype = ctypes.c_int
lib.CausalMovingAvgGpuLaunch.argtypes = (
    [ctypes.c_int, ctypes.c_void_p]
    + [ctypes.c_int64] * 4
    + [
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
)


def launcher(pointer_of):
    def launch(code, stream, shape, window, dx, dy, scratch):
        return lib.CausalMovingAvgGpuLaunch(
            code, stream, *shape, window, 0, pointer_of(dx), pointer_of(dy), pointer_of(scratch)
        )

    return launch


failed = 0
ran = 0
try:
    import cupy

    if cupy.cuda.runtime.getDeviceCount() > 0:
        ran += 1
        failed += check(
            f"CuPy stream (CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()})",
            cupy.asarray,
            cupy.asnumpy,
            lambda n: cupy.empty(n, cupy.uint8),
            lambda: cupy.cuda.Stream(non_blocking=True),
            lambda s: s.synchronize(),
            lambda: cupy.cuda.Device().synchronize(),
            lambda code, s, shape, w, dx, dy, sc: launcher(lambda a: a.data.ptr)(
                code, s.ptr if s is not None else 0, shape, w, dx, dy, sc
            ),
        )
except ImportError:
    pass
try:
    import torch

    if torch.cuda.is_available():
        ran += 1
        failed += check(
            f"PyTorch stream (CUDA {torch.version.cuda})",
            lambda a: torch.from_numpy(a).cuda(),
            lambda t: t.cpu().numpy(),
            lambda n: torch.empty(n, dtype=torch.uint8, device="cuda"),
            lambda: torch.cuda.Stream(),
            lambda s: s.synchronize(),
            torch.cuda.synchronize,
            lambda code, s, shape, w, dx, dy, sc: launcher(lambda t: t.data_ptr())(
                code, s.cuda_stream if s is not None else 0, shape, w, dx, dy, sc
            ),
        )
except ImportError:
    pass
if not ran:
    print("SKIP: no GPU, or neither CuPy nor PyTorch")
    sys.exit(77)
sys.exit(1 if failed else 0)
