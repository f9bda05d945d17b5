"""The benchmark's packed-sequence rows: the op with `segment_ids` against the same op without
them on the same tensor, and against what users do without ids (unpack the sequences to a padded
batch, run the op, gather the outputs back). Ratios of medians in the same run."""

import functools

import numpy as np
import tensorflow as tf

import causal_moving_avg as cma
from timing import time_call, time_pair


def packed_ids(rng, rows, steps, mean_length):
    """Ids of sequences of random lengths (uniform in [1, 2 * mean_length)), and their lengths."""
    ids = np.empty((rows, steps), np.int32)
    lengths = []
    for row in range(rows):
        t, k = 0, 0
        while t < steps:
            length = min(int(rng.integers(1, 2 * mean_length)), steps - t)
            ids[row, t : t + length] = k
            lengths.append(length)
            t, k = t + length, k + 1
    return ids, np.asarray(lengths, np.int64)


def unpack_pad_gather(x, lengths, window):
    """Without ids: every sequence a row of a zero-padded batch, then back to the packed layout."""
    channels = x.shape[-1]
    ragged = tf.RaggedTensor.from_row_lengths(tf.reshape(x, [-1, channels]), lengths)
    y = cma.causal_moving_avg(ragged.to_tensor(), window)
    return tf.reshape(tf.RaggedTensor.from_tensor(y, lengths=lengths).flat_values, tf.shape(x))


def sequence_rows(quick, repeats, min_seconds):
    shapes = [(8, 4096, 8), (1, 100_000, 1)] if quick else [(64, 16384, 8), (1, 10_000_000, 1)]
    rows = []
    for shape in shapes:
        rng = np.random.default_rng(4)
        x = tf.constant(rng.standard_normal(shape, np.float32))
        for mean_length in (1000, 64):
            ids, lengths = packed_ids(rng, shape[0], shape[1], mean_length)
            ids_tensor, lengths_tensor = tf.constant(ids), tf.constant(lengths)
            for window in (3, 1024):
                with_ids = functools.partial(cma.causal_moving_avg, x, window, segment_ids=ids_tensor)
                without_ids = functools.partial(cma.causal_moving_avg, x, window)
                packed, plain, count = time_pair(with_ids, without_ids, repeats, min_seconds)
                unpack = functools.partial(unpack_pad_gather, x, lengths_tensor, window)
                unpacked, _ = time_call(unpack, max(3, repeats // 3), min_seconds)
                name = f"packed, mean length {mean_length}"
                print(
                    f"  {name:30s} {list(shape)} W={window:5d} {packed * 1e3:9.3f} ms  "
                    f"{packed / plain:5.2f} x without ids, "
                    f"{unpacked / packed:6.2f} x faster than unpack/pad/gather",
                    flush=True,
                )
                rows.append(
                    {
                        "case": name,
                        "shape": list(shape),
                        "window": window,
                        "median_ms": packed * 1e3,
                        "without_ids_ms": plain * 1e3,
                        "unpack_pad_gather_ms": unpacked * 1e3,
                        "vs_without_ids": packed / plain,
                        "unpack_pad_gather_over_this": unpacked / packed,
                        "calls": count,
                    }
                )
    return rows


def markdown_table(rows):
    lines = [
        "| case | shape | W | op with ids, ms | / op without ids | unpack-pad-gather / op with ids |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['shape']} | {r['window']} | {r['median_ms']:.3f} | "
            f"{r['vs_without_ids']:.2f} | {r['unpack_pad_gather_over_this']:.1f} |"
        )
    return "\n".join(lines)
