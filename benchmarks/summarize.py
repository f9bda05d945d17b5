"""Condenses benchmarks/results/results.json (written by bench.py) into the ratio tables of README.

python benchmarks/summarize.py [results.json]
"""

import json
import sys
from collections import defaultdict
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "results.json"


def main(path=RESULTS):
    report = json.loads(Path(path).read_text())
    cases = defaultdict(dict)
    for row in report["rows"]:
        cases[(tuple(row["shape"]), row["window"], row["edge"])][row["method"]] = row["median_ms"]

    print(
        "| shape | W | edge | op ms (eager) | op / TF floor, eager | op / TF floor, tf.function "
        "| Keras Conv1D / op | best TF composite / op | model + predict per call / op |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for (shape, window, edge), ms in cases.items():
        eager, graph = ms["causal_moving_avg (eager)"], ms["causal_moving_avg (tf.function)"]
        composites = [
            ms[m] for m in ("tf.nn depthwise conv", "tf.nn.avg_pool1d", "tf cumsum difference") if m in ms
        ]
        conv, per_call = ms.get("Keras Conv1D (tf.function)"), ms.get("Keras model + predict per call")
        cells = [
            str(list(shape)),
            str(window),
            edge,
            f"{eager:.3f}",
            f"{eager / ms['tf.math.multiply (floor)']:.2f}",
            f"{graph / ms['tf.math.multiply (tf.function floor)']:.2f}",
            f"{conv / eager:.1f}" if conv else "-",
            f"{min(composites) / eager:.1f}" if composites else "-",
            f"{per_call / eager:.0f}" if per_call else "-",
        ]
        print("| " + " | ".join(cells) + " |")
    print()
    print(
        "| shape | W | edge | op ms (XLA) | op XLA / op eager | op XLA / TF floor, XLA "
        "| best XLA composite / op XLA |"
    )
    print("|---|---:|---|---:|---:|---:|---:|")
    for (shape, window, edge), ms in cases.items():
        if "causal_moving_avg (XLA)" not in ms:
            continue
        op_xla = ms["causal_moving_avg (XLA)"]
        composites = [ms[m] for m in ("tf.nn.avg_pool1d (XLA)", "tf cumsum difference (XLA)") if m in ms]
        cells = [
            str(list(shape)),
            str(window),
            edge,
            f"{op_xla:.3f}",
            f"{op_xla / ms['causal_moving_avg (eager)']:.2f}",
            f"{op_xla / ms['tf.math.multiply (XLA floor)']:.2f}",
            f"{min(composites) / op_xla:.1f}" if composites else "-",
        ]
        print("| " + " | ".join(cells) + " |")
    print()
    print(
        "| shape | W | NumPy binding ms | bottleneck move_mean / ours | pandas rolling / ours "
        "| scipy uniform_filter1d / ours |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for (shape, window, _), ms in cases.items():
        if "numpy_causal_moving_avg partial" in ms:
            ours, ours_zeros = ms["numpy_causal_moving_avg partial"], ms["numpy_causal_moving_avg zeros"]
            bottleneck, pandas = ms["bottleneck move_mean"] / ours, ms["pandas rolling().mean()"] / ours
            scipy = ms["scipy uniform_filter1d"] / ours_zeros
            print(
                f"| {list(shape)} | {window} | {ours:.2f} | {bottleneck:.1f} | {pandas:.1f} | {scipy:.1f} |"
            )


if __name__ == "__main__":
    main(*sys.argv[1:])
