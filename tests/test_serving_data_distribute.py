"""SavedModel export and serving, tf.data, and distributed training with the op."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import causal_moving_avg as cma
from conftest import reference_moving_avg

HERE = Path(__file__).resolve().parent
X = np.random.RandomState(0).randn(2, 40, 3).astype(np.float32)

LOAD = """
import sys, numpy as np
{prelude}
import tensorflow as tf
module = tf.saved_model.load(sys.argv[1])
np.save(sys.argv[2], module.smooth(np.load(sys.argv[3])).numpy())
"""


def run_python(code, *args, **kwargs):
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, **kwargs
    )


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "smoother"
    module = tf.Module()
    module.smooth = tf.function(
        lambda x: cma.causal_moving_avg(x, window=5, edge="partial"),
        input_signature=[tf.TensorSpec([None, None, 3], tf.float32)],
    )
    tf.saved_model.save(module, str(path))
    np.save(path.parent / "x.npy", X)
    return path


def test_saved_model_loads_in_a_fresh_process_after_import(saved_model):
    out = saved_model.parent / "y.npy"
    result = run_python(
        LOAD.format(prelude="import causal_moving_avg"), saved_model, out, saved_model.parent / "x.npy"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    np.testing.assert_array_equal(np.load(out), cma.causal_moving_avg(X, window=5, edge="partial").numpy())


def test_saved_model_without_the_library_fails_with_op_not_registered(saved_model):
    result = run_python(
        LOAD.format(prelude=""), saved_model, saved_model.parent / "z.npy", saved_model.parent / "x.npy"
    )
    assert result.returncode != 0
    assert "Op type not registered 'CausalMovingAvg'" in result.stderr


def test_saved_model_serves_with_only_the_library_loaded(saved_model):
    """How a serving process without the Python package uses it: load library_path() first."""
    prelude = f"import tensorflow as tf; tf.load_op_library({cma.library_path()!r})"
    out = saved_model.parent / "w.npy"
    result = run_python(LOAD.format(prelude=prelude), saved_model, out, saved_model.parent / "x.npy")
    assert result.returncode == 0, result.stderr[-2000:]
    np.testing.assert_array_equal(np.load(out), cma.causal_moving_avg(X, window=5, edge="partial").numpy())


def test_inside_tf_data_map():
    series = [np.random.randn(n).astype(np.float32) for n in (5, 17, 64)]
    dataset = tf.data.Dataset.from_generator(
        lambda: iter(series), output_signature=tf.TensorSpec([None], tf.float32)
    )
    mapped = dataset.map(
        lambda s: cma.causal_moving_avg(s, window=4), num_parallel_calls=2, deterministic=True
    )
    for original, smoothed in zip(series, mapped, strict=True):
        np.testing.assert_allclose(
            smoothed.numpy(), reference_moving_avg(original, 4, 0), rtol=1e-6, atol=1e-7
        )


def losses_of(mode, env=None, timeout=120):
    result = subprocess.run(
        [sys.executable, str(HERE / "distributed_training.py"), mode],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_mirrored_strategy_over_two_logical_cpus_matches_one_device():
    single, mirrored = losses_of("fit_single"), losses_of("mirrored")
    assert len(single) == 2 and np.all(np.isfinite(single))
    np.testing.assert_allclose(mirrored, single, rtol=1e-5)


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_multi_worker_mirrored_strategy_two_workers_match_one_device():
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    processes = []
    for index in range(2):
        env = dict(
            os.environ,
            TF_CONFIG=json.dumps(
                {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
            ),
        )
        processes.append(
            subprocess.Popen(
                [sys.executable, str(HERE / "distributed_training.py"), "multiworker"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    try:
        outputs = [p.communicate(timeout=120) for p in processes]
    finally:
        for p in processes:
            p.kill()
    for p, (_, err) in zip(processes, outputs, strict=True):
        assert p.returncode == 0, err[-3000:]
    per_worker = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    single = losses_of("single")
    assert len(single) == 5 and np.all(np.isfinite(single))
    for losses in per_worker:
        np.testing.assert_allclose(losses, single, rtol=1e-5)
