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
import stream_in_chunks  # noqa: E402


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


def test_a_stream_in_chunks_and_one_sample_at_a_time_give_one_call_s_averages():
    rng = np.random.default_rng(2)
    series = tf.constant(rng.standard_normal((2, 300, 3)), tf.float32)
    expected = keras_conv1d_moving_avg(series.numpy(), 24)
    chunked, state = stream_in_chunks.average_in_chunks(series, 24, [1, 5, 100, 0, 194])
    stepped, _ = stream_in_chunks.one_sample_at_a_time(series, 24)
    np.testing.assert_allclose(chunked.numpy(), expected, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(stepped.numpy(), expected, rtol=2e-6, atol=2e-6)
    assert int(state.seen) == 300 and state.history.shape == (2, 23, 3)
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "stream_in_chunks.py")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "steps seen" in result.stdout


def test_packed_training_data_gives_each_sequence_its_own_averages():
    import packed_sequences

    from conftest import reference_moving_avg

    rng = np.random.default_rng(3)
    sequences = [rng.standard_normal((int(rng.integers(1, 60)), 2)).astype(np.float32) for _ in range(20)]
    packed, ids, placements = packed_sequences.pack(sequences, row_steps=128)
    import causal_moving_avg as cma

    averages = cma.causal_moving_avg(packed, window=5, edge="partial", segment_ids=ids).numpy()
    for k, (row, start, length) in enumerate(placements):
        expected = reference_moving_avg(sequences[k][None], 5, 1, "partial")[0]
        np.testing.assert_allclose(averages[row, start : start + length], expected, rtol=2e-6, atol=2e-6)
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "packed_sequences.py")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "largest difference: 0.0" in result.stdout
