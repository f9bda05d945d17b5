"""Drives the NumPy binding over edge cases; run by tests/test_hardening.py against a build made
with AddressSanitizer and UndefinedBehaviorSanitizer (CMA_SANITIZE=ON), where any report aborts.

    python sanitizer_driver.py BUILD_DIR
"""

import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
import _numpy_core  # noqa: E402  (the sanitized binding, not the installed one)


def reference(a, window, axis, edge):
    a = np.moveaxis(a.astype(np.float64), axis, -1)
    prefix = np.concatenate([np.zeros(a.shape[:-1] + (1,)), np.cumsum(a, axis=-1)], axis=-1)
    ends = np.arange(1, a.shape[-1] + 1)
    starts = np.maximum(ends - min(window, a.shape[-1] + 1), 0)
    divisor = np.full(a.shape[-1], float(window)) if edge == 0 else (ends - starts).astype(np.float64)
    return np.moveaxis((prefix[..., ends] - prefix[..., starts]) / divisor, -1, axis)


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
                    np.testing.assert_allclose(y, reference(a, window, axis, edge), rtol=1e-9, atol=1e-12)
                calls += 1
special = rng.standard_normal((3, 50_000, 2))
special[0, 100, 0], special[1, 32_767, 1], special[2, 32_768, 0] = np.inf, np.nan, -np.inf
for window in (1, 3, 1000):
    _numpy_core.causal_moving_avg(special, window, 1, 0)
    _numpy_core.causal_moving_avg(special[:, ::3, ::-1], window, 1, 1)  # a non-contiguous view
    calls += 2
print(f"sanitizer driver: {calls} calls clean")
