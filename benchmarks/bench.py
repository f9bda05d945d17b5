"""The main job: CausalMovingAvg against what users run today, in one run on one machine.

    python benchmarks/bench.py            # full run: table, JSON and plot under benchmarks/results/
    python benchmarks/bench.py --quick    # a smaller run, for a smoke check

Every method computes the same causal moving average (edge='zeros') of the same float32 tensor.
Times are medians of repeated calls; GB/s counts read + write traffic (2 x tensor bytes); ratios
are against TF's floor (tf.math.multiply(x, 1.0), the cheapest op that reads and writes the
tensor; in eager mode, inside tf.function for the tf.function variants and under XLA for the XLA
ones) and against the Keras Conv1D that the op replaces, all measured in the same run.
"""

import argparse
import functools
import json
import os
import platform
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import sequences  # noqa: E402
import streams  # noqa: E402
import tensorflow as tf  # noqa: E402

import causal_moving_avg as cma  # noqa: E402
from timing import host, time_call  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
# Methods whose work grows with W (direct convolutions) run only up to this window.
MAX_DIRECT_WINDOW = 64


def frozen_conv1d(channels, window):
    """The user's frozen causal Conv1D (depthwise through groups), unbuilt; see with_mean_weights."""
    import keras

    return keras.layers.Conv1D(
        filters=channels,
        kernel_size=window,
        padding="causal",
        groups=channels,
        use_bias=False,
        trainable=False,
    )


def with_mean_weights(layer_or_model, channels, window):
    layer_or_model.set_weights([np.full((window, 1, channels), 1.0 / window, np.float32)])
    return layer_or_model


def keras_conv1d(channels, window):
    """The frozen Conv1D layer inside tf.function."""
    layer = frozen_conv1d(channels, window)
    layer.build((None, None, channels))
    with_mean_weights(layer, channels, window)
    return tf.function(lambda x: layer(x))


def keras_model_predict(x, window):
    """What users often do today: build a Keras model around the frozen Conv1D and call predict,
    per call."""
    import keras

    steps, channels = x.shape[1], x.shape[2]
    inputs = keras.Input(shape=(steps, channels))
    model = keras.Model(inputs, frozen_conv1d(channels, window)(inputs))
    return with_mean_weights(model, channels, window).predict(x, verbose=0)


def causal_pad(x, window):
    return tf.pad(x, [[0, 0], [window - 1, 0], [0, 0]])


def tf_depthwise_conv(channels, window):
    kernel = tf.constant(np.full((1, window, channels, 1), 1.0 / window, np.float32))

    @tf.function
    def run(x):
        padded = causal_pad(x, window)[:, None]
        return tf.nn.depthwise_conv2d(padded, kernel, [1, 1, 1, 1], "VALID")[:, 0]

    return run


def tf_avg_pool(window):
    return tf.function(lambda x: tf.nn.avg_pool1d(causal_pad(x, window), window, 1, "VALID"))


def tf_cumsum_difference(window):
    @tf.function
    def run(x):
        total = tf.cumsum(x, axis=1)
        shifted = tf.pad(total, [[0, 0], [window, 0], [0, 0]])[:, : tf.shape(x)[1]]
        return (total - shifted) / window

    return run


def xla(fn):
    """fn compiled by XLA, as Keras 3 compiles models on GPUs (and anywhere with jit_compile=True)."""
    return tf.function(fn, jit_compile=True)


def methods_for(x, window, edge):
    """(name, callable) pairs for one input; the peers implement edge='zeros' only."""
    channels = x.shape[2]

    def op(t):
        return cma.causal_moving_avg(t, window=window, edge=edge)

    op_graph, op_xla = tf.function(op), xla(op)
    # The scalar is an argument: a constant 1.0 would let Grappler remove the multiply altogether.
    multiply_graph = tf.function(lambda t, scale: tf.math.multiply(t, scale))
    multiply_xla = xla(lambda t, scale: tf.math.multiply(t, scale))
    one = tf.constant(1.0)
    found = [
        ("causal_moving_avg (eager)", lambda: op(x)),
        ("causal_moving_avg (tf.function)", lambda: op_graph(x)),
        ("causal_moving_avg (XLA)", lambda: op_xla(x)),
        ("tf.math.multiply (floor)", lambda: tf.math.multiply(x, 1.0)),
        ("tf.math.multiply (tf.function floor)", lambda: multiply_graph(x, one)),
        ("tf.math.multiply (XLA floor)", lambda: multiply_xla(x, one)),
    ]
    array = x.numpy()
    destination = np.empty_like(array)
    found.append(("np.copyto (bandwidth)", lambda: np.copyto(destination, array)))
    if edge != "zeros":
        return found
    peers = [
        ("tf cumsum difference", tf_cumsum_difference(window)),
        ("tf cumsum difference (XLA)", xla(tf_cumsum_difference(window))),
    ]
    if window <= MAX_DIRECT_WINDOW:
        peers += [
            ("Keras Conv1D (tf.function)", keras_conv1d(channels, window)),
            ("tf.nn depthwise conv", tf_depthwise_conv(channels, window)),
            ("tf.nn.avg_pool1d", tf_avg_pool(window)),
            ("tf.nn.avg_pool1d (XLA)", xla(tf_avg_pool(window))),
        ]
    return found + [(name, functools.partial(peer, x)) for name, peer in peers]


def numpy_methods_for(host, window):
    """The NumPy binding against NumPy-world peers with matching semantics. Each peer is checked
    against the binding on this input before it is timed."""
    import bottleneck
    import pandas as pd
    import scipy.ndimage

    batch, steps, channels = host.shape

    def pandas_rolling():
        # pandas rolls along the rows of a frame: steps as rows, (batch, channel) as columns.
        frame = pd.DataFrame(host.transpose(1, 0, 2).reshape(steps, batch * channels))
        rolled = frame.rolling(window, min_periods=1).mean().to_numpy(np.float32)
        return rolled.reshape(steps, batch, channels).transpose(1, 0, 2)

    methods = [
        (
            "numpy_causal_moving_avg partial",
            "partial",
            lambda: cma.numpy_causal_moving_avg(host, window, 1, "partial"),
        ),
        ("bottleneck move_mean", "partial", lambda: bottleneck.move_mean(host, window, axis=1, min_count=1)),
        ("pandas rolling().mean()", "partial", pandas_rolling),
        (
            "numpy_causal_moving_avg zeros",
            "zeros",
            lambda: cma.numpy_causal_moving_avg(host, window, 1, "zeros"),
        ),
        (
            "scipy uniform_filter1d",
            "zeros",
            lambda: scipy.ndimage.uniform_filter1d(
                host, window, axis=1, mode="constant", origin=(window - 1) // 2
            ),
        ),
    ]
    for name, edge, fn in methods:
        # Peers sum in float32 with running sums; a loose check only guards the semantics.
        expected = cma.numpy_causal_moving_avg(host, window, 1, edge)
        np.testing.assert_allclose(fn(), expected, rtol=1e-2, atol=1e-2, err_msg=name)
    return [(name, fn) for name, _, fn in methods]


def run_case(shape, window, edge, repeats, min_seconds, per_call_repeats, numpy_peers=False):
    x = tf.constant(np.random.default_rng(0).standard_normal(shape, np.float32))
    traffic = 2 * x.numpy().nbytes
    rows = []
    cases = methods_for(x, window, edge)
    if numpy_peers:
        cases += numpy_methods_for(x.numpy(), window)
    if edge == "zeros" and per_call_repeats and np.prod(shape) <= 2**20 and window <= MAX_DIRECT_WINDOW:
        host = x.numpy()
        cases.append(("Keras model + predict per call", lambda: keras_model_predict(host, window)))
    for name, fn in cases:
        reps = per_call_repeats if name.startswith("Keras model") else repeats
        median, count = time_call(fn, reps, 0 if name.startswith("Keras model") else min_seconds)
        rows.append(
            {
                "shape": list(shape),
                "window": window,
                "edge": edge,
                "method": name,
                "median_ms": median * 1e3,
                "calls": count,
                "gb_per_s": traffic / median / 1e9,
            }
        )
        print(f"  {name:34s} {median * 1e3:10.3f} ms  {traffic / median / 1e9:7.2f} GB/s", flush=True)
    by_name = {r["method"]: r["median_ms"] for r in rows}
    for r in rows:
        floor = "tf.math.multiply (floor)"
        if "tf.function" in r["method"]:
            floor = "tf.math.multiply (tf.function floor)"
        elif "XLA" in r["method"]:
            floor = "tf.math.multiply (XLA floor)"
        r["vs_floor"] = r["median_ms"] / by_name[floor]
        r["vs_copy"] = r["median_ms"] / by_name["np.copyto (bandwidth)"]
        conv = by_name.get("Keras Conv1D (tf.function)")
        r["conv1d_over_this"] = conv / r["median_ms"] if conv else None
    return rows


def markdown_table(rows):
    lines = [
        "| shape | W | edge | method | median ms | GB/s | / TF floor | / np.copyto | Conv1D time / this |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        conv = f"{r['conv1d_over_this']:.1f}" if r["conv1d_over_this"] else "-"
        lines.append(
            f"| {r['shape']} | {r['window']} | {r['edge']} | {r['method']} | {r['median_ms']:.3f} | "
            f"{r['gb_per_s']:.2f} | {r['vs_floor']:.2f} | {r['vs_copy']:.2f} | {conv} |"
        )
    return "\n".join(lines)


def plot(sweep_rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(11.5, 5.5))
    methods = sorted({r["method"] for r in sweep_rows})
    colors = plt.get_cmap("tab20").colors
    for index, method in enumerate(methods):
        points = sorted((4 * np.prod(r["shape"]), r["gb_per_s"]) for r in sweep_rows if r["method"] == method)
        style = {"color": colors[index % len(colors)], "marker": "osD^v<>"[index % 7]}
        if method.startswith("np.copyto"):
            style.update(linestyle="--", color="black")
        elif method.startswith("causal_moving_avg"):
            style.update(linewidth=2.5)
        sizes, rates = [p[0] / 2**20 for p in points], [p[1] for p in points]
        axes.plot(sizes, rates, label=method, **style)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("tensor size (MiB, float32)")
    axes.set_ylabel("throughput (GB/s of read + write)")
    axes.set_title(f"Causal moving average, W=3, [batch, 4096, 8]; {host()['cpu']}, {os.cpu_count()} cores")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    parser.add_argument("--output", type=Path, default=RESULTS, help="folder for the table, JSON and plot")
    parser.add_argument("--plot-only", action="store_true", help="redraw the plot from the folder's JSON")
    args = parser.parse_args(argv)
    if args.plot_only:
        plot(json.loads((args.output / "results.json").read_text())["sweep"], args.output / "throughput.png")
        return 0

    if args.quick:
        shapes, windows, edges = [(8, 4096, 8), (1, 100_000, 1), (1, 1000, 1)], [3, 1024], ["zeros"]
        numpy_windows = [3]
        sweep_batches, repeats, min_seconds, per_call_repeats = [1, 8], 5, 0.05, 1
    else:
        shapes = [(64, 16384, 8), (1, 10_000_000, 1), (256, 4096, 1), (1, 1000, 1)]
        windows, edges = [3, 32, 1024, 4096], ["zeros", "partial"]
        numpy_windows = [3, 1024]
        sweep_batches, repeats, min_seconds, per_call_repeats = [1, 4, 16, 64, 256], 15, 0.3, 5

    cases = [(s, w, e) for s in shapes for w in windows for e in edges]
    rows = []
    for index, (shape, window, edge) in enumerate(cases, 1):
        print(f"[{index}/{len(cases)}] shape={list(shape)} window={window} edge={edge}", flush=True)
        numpy_peers = edge == "zeros" and window in numpy_windows and np.prod(shape) > 10_000
        rows += run_case(shape, window, edge, repeats, min_seconds, per_call_repeats, numpy_peers)
    sweep = []
    for index, batch in enumerate(sweep_batches, 1):
        print(f"[sweep {index}/{len(sweep_batches)}] shape=[{batch}, 4096, 8] window=3", flush=True)
        sweep += run_case((batch, 4096, 8), 3, "zeros", repeats, min_seconds, 0)
    print("[streams] a state carried across calls", flush=True)
    stream = streams.stream_rows(args.quick, repeats, min_seconds)
    print("[packed sequences] segment_ids", flush=True)
    packed = sequences.sequence_rows(args.quick, repeats, min_seconds)

    machine = {
        **host(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "numpy": np.__version__,
        "build": cma.build_info(),
    }
    args.output.mkdir(parents=True, exist_ok=True)
    report = {"machine": machine, "rows": rows, "sweep": sweep, "streams": stream, "packed": packed}
    (args.output / "results.json").write_text(json.dumps(report, indent=1))
    table = (
        markdown_table(rows)
        + "\n\nStreams (ratios of medians in this run):\n\n"
        + streams.markdown_table(stream)
    )
    (args.output / "results.md").write_text(table + "\n")
    plot(sweep, args.output / "throughput.png")
    print()
    print(table)
    print(f"\nwrote {args.output / 'results.md'}, results.json and throughput.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
