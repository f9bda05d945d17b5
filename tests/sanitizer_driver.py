"""Drives the NumPy binding over edge cases; run by tests/test_hardening.py against a build made
with AddressSanitizer and UndefinedBehaviorSanitizer (CMA_SANITIZE=ON), where any report aborts.

    python sanitizer_driver.py BUILD_DIR
"""

import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
import _numpy_core  # noqa: E402  (the sanitized binding, not the installed one)

from conftest import reference_by_prefix_sums  # noqa: E402  (tests/ is this script's folder)

rng = np.random.default_rng(0)
calls = 0
shapes = [(0,), (1,), (2,), (5, 0, 3), (3, 1, 2), (1, 70_000, 1), (2, 40, 700), (4, 33_000, 2)]
windows = [1, 2, 3, 64, 40_000, 2**40, 2**63 - 1]
for shape in shapes:
    for window in windows:
        for edge in (0, 1):
            for dtype in (np.float16, np.float32, np.float64):
                a = rng.standard_normal(shape).astype(dtype)
                axis = 1 if len(shape) > 1 else 0
                y = _numpy_core.causal_moving_avg(a, window, axis, edge)
                assert y.shape == a.shape and y.dtype == a.dtype
                if dtype == np.float64 and a.size:
                    expected = reference_by_prefix_sums(a, window, axis, ("zeros", "partial")[edge])
                    np.testing.assert_allclose(y, expected, rtol=1e-9, atol=1e-12)
                calls += 1
special = rng.standard_normal((3, 50_000, 2))
special[0, 100, 0], special[1, 32_767, 1], special[2, 32_768, 0] = np.inf, np.nan, -np.inf
for window in (1, 3, 1000):
    _numpy_core.causal_moving_avg(special, window, 1, 0)
    _numpy_core.causal_moving_avg(special[:, ::3, ::-1], window, 1, 1)  # a non-contiguous view
    calls += 2
print(f"sanitizer driver: {calls} calls clean")
