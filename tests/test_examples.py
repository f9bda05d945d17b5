"""The per-call Conv1D loop, rewritten with the op: the same numbers as the Conv1D, no retracing."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

from conftest import keras_conv1d_moving_avg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import conv1d_loop_rewritten  # noqa: E402


def test_slide2_equals_the_frozen_conv1d_on_series_of_changing_length():
    rng = np.random.default_rng(1)
    for length in [1, 2, 3, 17, 256, 1000]:
        series = rng.standard_normal(length).astype(np.float32)
        expected = keras_conv1d_moving_avg(series.reshape(1, -1, 1), 3).reshape(-1, 1)
        got = conv1d_loop_rewritten.slide2(tf.constant(series)).numpy()
        assert got.shape == (length, 1)
        np.testing.assert_allclose(got, expected, rtol=2e-6, atol=2e-6)


def test_example_runs_without_retracing_warnings():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "conv1d_loop_rewritten.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.count("\n") == 20
    assert "retracing" not in result.stderr
