"""Drives the NumPy binding over edge cases; run by tests/test_hardening.py against a build made
with AddressSanitizer and UndefinedBehaviorSanitizer (CMA_SANITIZE=ON), where any report aborts.
Then checks that this build (baseline x86-64 code: no AVX2 version under ASan) gives the same bits
as the installed binding (-O3, which runs its AVX2 version on a CPU that has AVX2).

    python sanitizer_driver.py BUILD_DIR INSTALLED_NUMPY_CORE_SO
"""

import importlib.util
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, sys.argv[1])
import _numpy_core  # noqa: E402  (the sanitized binding, not the installed one)

from conftest import reference_by_prefix_sums  # noqa: E402  (tests/ is this script's folder)

rng = np.random.default_rng(0)
DTYPES = [ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name) for name in _numpy_core.DTYPES]
calls = 0
shapes = [
    (0,),
    (1,),
    (2,),
    (5, 0, 3),
    (3, 1, 2),
    (1, 70_000, 1),
    (1, 200_000, 1),
    (2, 40, 700),
    (4, 33_000, 2),
]
windows = [1, 2, 3, 64, 40_000, 2**40, 2**63 - 1]
for shape in shapes:
    for window in windows:
        for edge in _numpy_core.EDGES:
            for dtype in DTYPES:
                a = rng.standard_normal(shape).astype(dtype)
                axis = 1 if len(shape) > 1 else 0
                y = _numpy_core.causal_moving_avg(a, window, axis, edge)
                assert y.shape == a.shape and y.dtype == a.dtype
                if dtype == np.float64 and a.size:
                    expected = reference_by_prefix_sums(a, window, axis, edge)
                    np.testing.assert_allclose(y, expected, rtol=1e-9, atol=1e-12)
                calls += 1
special = rng.standard_normal((3, 50_000, 2))
special[0, 100, 0], special[1, 32_767, 1], special[2, 32_768, 0] = np.inf, np.nan, -np.inf
special[2, 40_000:40_002, 1] = 1.5e308  # an overflowing window, then tiny values
special[2, 40_002:, 1] *= 1e-300
for window in (1, 3, 1000):
    _numpy_core.causal_moving_avg(special, window, 1, "zeros")
    _numpy_core.causal_moving_avg(special[:, ::3, ::-1], window, 1, "partial")  # a non-contiguous view
    calls += 2

spec = importlib.util.spec_from_file_location("_numpy_core", sys.argv[2])
installed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(installed)
compared = 0
for shape in [(256, 4096, 1), (1, 70_000, 1), (1, 200_000, 1), (4, 5000, 8), (2, 3000, 300)]:
    for window in (1, 3, 4, 5, 32, 1024, 40_000):
        for edge in _numpy_core.EDGES:
            for dtype in DTYPES:
                a = (1000 + 50 * rng.standard_normal(shape)).astype(dtype)
                ours = _numpy_core.causal_moving_avg(a, window, 1, edge)
                theirs = installed.causal_moving_avg(a, window, 1, edge)
                assert np.array_equal(ours.view(np.uint8), theirs.view(np.uint8)), (
                    shape,
                    window,
                    edge,
                    dtype,
                )
                compared += 1
print(f"sanitizer driver: {calls} calls clean; {compared} results bitwise equal to the installed build")
