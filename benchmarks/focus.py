"""One shape, the op against TF's floor, interleaved: for ratios finer than the main job's.

    python benchmarks/focus.py                                  # [256, 4096, 1], W = 1, 3, 1024, 4096
    python benchmarks/focus.py --shape 1,1000,1 --windows 3,32
    python benchmarks/focus.py --shape 1,10000000,1 --windows 3,4096 --xla

The op (both edges) and tf.math.multiply(x, 1.0) take turns in one process: each round times
every method (median of --calls calls), and a method's figure is its best round, so a slow spell
of this shared machine hits all methods alike. Eager, and inside tf.function against the multiply
inside tf.function (the scalar passed as an argument, as in bench.py); with --xla also both
under tf.function(jit_compile=True). Prints microseconds and the ratio to the multiply in the same
mode, and with --xla each method's XLA time over its eager time.
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import causal_moving_avg as cma  # noqa: E402
from timing import host, time_call  # noqa: E402


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shape", default="256,4096,1", help="comma-separated; steps on axis 1")
    parser.add_argument("--windows", default="1,3,1024,4096", help="comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--xla", action="store_true", help="also time under jit_compile=True")
    args = parser.parse_args()
    shape = tuple(int(s) for s in args.shape.split(","))
    windows = [int(w) for w in args.windows.split(",")]
    x = tf.constant(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    one = tf.constant(1.0)

    compiled = {"tf.function": False, "XLA": True} if args.xla else {"tf.function": False}
    methods = {("multiply", "eager"): lambda: tf.math.multiply(x, 1.0)}
    for mode, jit in compiled.items():
        multiply = tf.function(lambda a, s: tf.math.multiply(a, s), jit_compile=jit)
        methods[("multiply", mode)] = lambda f=multiply: f(x, one)
    for window in windows:
        for edge in ("zeros", "partial"):
            name = f"op W={window} {edge}"
            methods[(name, "eager")] = lambda w=window, e=edge: cma.causal_moving_avg(x, w, axis=1, edge=e)
            for mode, jit in compiled.items():
                op = tf.function(
                    lambda a, w=window, e=edge: cma.causal_moving_avg(a, w, axis=1, edge=e), jit_compile=jit
                )
                methods[(name, mode)] = lambda f=op: f(x)

    best = {key: float("inf") for key in methods}
    for round_index in range(args.rounds):
        for key, call in methods.items():
            best[key] = min(best[key], time_call(call, args.calls, max_seconds=float("inf"))[0])
        print(f"round {round_index + 1}/{args.rounds} done", flush=True)

    print(f"host: {host()}")
    print(f"shape {list(shape)}, float32; best of {args.rounds} rounds of {args.calls}-call medians")
    print("| method | mode | us | / multiply |" + (" XLA / eager |" if args.xla else ""))
    print("|---|---|---:|---:|" + ("---:|" if args.xla else ""))
    for (name, mode), seconds in best.items():
        floor = best[("multiply", mode)]
        row = f"| {name} | {mode} | {seconds * 1e6:.0f} | {seconds / floor:.2f} |"
        if args.xla:
            row += f" {seconds / best[(name, 'eager')]:.2f} |" if mode == "XLA" else " |"
        print(row)


if __name__ == "__main__":
    main()
