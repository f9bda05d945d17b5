"""Every way the CPU kernel cuts the work (spans along long sequences, many rows, groups of
lanes, windows spanning spans, blocks of the split windows) against the float64 reference, and bitwise
determinism whatever the number of threads."""

import hashlib
import subprocess
import sys

import numpy as np
import pytest

from causal_moving_avg import causal_moving_avg
from conftest import CPU_PLAN, reference_by_prefix_sums, reference_moving_avg

# The CPU plan (cc/core/plan.h), as built: spans of max(span_elements / lanes, 4W) steps,
# units of at most max_unit_lanes channels, windows split at blocks of up to block_steps steps.
SPAN_ELEMENTS = CPU_PLAN["span_elements"]
BLOCK = CPU_PLAN["block_steps"]


@pytest.mark.parametrize(
    "shape,window",
    [
        ((1, 100_000, 1), 3),  # one long sequence: several spans, summed directly
        ((1, 100_000, 1), 300),
        ((500, 50, 1), 7),  # many short rows
        ((3, 2000, 300), 5),  # wide channels: two lane groups (256 + 44)
        ((2, 50_000, 8), 3000),  # windows spanning many 4096-step minimum spans
        ((1, 70_001, 3), 9000),  # ragged last span, odd inner
    ],
)
@pytest.mark.parametrize("edge", ["zeros", "partial"])
def test_sharding_paths_match_reference(shape, window, edge):
    x = np.random.randn(*shape) * 5 + 3
    y = causal_moving_avg(x.astype(np.float32), window=window, edge=edge).numpy()
    expected = reference_by_prefix_sums(x.astype(np.float32), window, 1, edge)
    scale = reference_by_prefix_sums(np.abs(x.astype(np.float32)), window, 1, edge)
    assert np.all(np.abs(y - expected) <= 2e-7 * scale + 1e-30)


@pytest.mark.parametrize("window", [1, 3, 50])
def test_non_finite_at_span_and_block_boundaries(window):
    steps = 3 * SPAN_ELEMENTS + 100
    x = np.random.randn(1, steps, 1)
    positions = [
        0,
        BLOCK - 1,
        BLOCK,
        window,
        SPAN_ELEMENTS - 1,
        SPAN_ELEMENTS,
        SPAN_ELEMENTS + window - 1,
        2 * SPAN_ELEMENTS - 2,
        2 * SPAN_ELEMENTS + BLOCK * 3,
        steps - 1,
    ]
    for k, p in enumerate(positions):
        x[0, p, 0] = [np.inf, -np.inf, np.nan][k % 3]
    y = causal_moving_avg(x, window=window).numpy()
    expected = reference_moving_avg(x, window, 1)
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(y[~finite], expected[~finite])
    np.testing.assert_allclose(y[finite], expected[finite], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("window", [3, 1024, 100_000])
def test_long_offset_sequence_error_is_one_float32_rounding(window):
    """4 million samples around 1000, exactly summed with integers (every float32 in [512, 1024)
    is a multiple of 2**-14); the op must stay within half an ulp of float32."""
    n = 4_000_000
    x = (1000.0 + np.random.randn(n)).astype(np.float32)
    assert x.min() >= 512 and x.max() < 1024
    prefix = np.concatenate([[0], np.cumsum((x.astype(np.float64) * 2**14).astype(np.int64))])
    sums = prefix[1:] - prefix[np.maximum(np.arange(1, n + 1) - window, 0)]
    expected = sums / (window * 2.0**14)
    y = causal_moving_avg(x, window=window).numpy().astype(np.float64)
    ulp = np.spacing(expected.astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(y - expected) / ulp) <= 0.5 + 1e-6


DIGEST_SCRIPT = """
import hashlib, sys
import numpy as np, tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(int(sys.argv[1]))
import causal_moving_avg as cma
digest = hashlib.sha256()
rng = np.random.default_rng(3)
for shape, window, dtype in [((1, 3_000_000, 1), 3, np.float32), ((1, 3_000_000, 1), 5000, np.float64),
                             ((1, 3_000_000, 1), 32, np.float32), ((64, 8192, 8), 33, np.float32),
                             ((16, 4096, 300), 7, np.float16)]:
    x = (rng.standard_normal(shape) * 100 + 10).astype(dtype)
    x.flat[::100_003] = np.inf
    for edge in ("zeros", "partial"):
        digest.update(cma.causal_moving_avg(x, window=window, edge=edge).numpy().tobytes())
print(digest.hexdigest())
"""


def test_bitwise_identical_with_one_or_two_threads():
    digests = set()
    for threads in (1, 2):
        result = subprocess.run(
            [sys.executable, "-c", DIGEST_SCRIPT, str(threads)], capture_output=True, text=True, check=True
        )
        digests.add(result.stdout.strip().splitlines()[-1])
    assert len(digests) == 1 and len(next(iter(digests))) == len(hashlib.sha256().hexdigest())
