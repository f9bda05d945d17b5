"""Packed training data: several short sequences in one row of a batch, with an id per step, so no
step is padding. The moving average must not mix one sequence's samples into the next one's window:
`segment_ids` cuts every window at its sequence's start. A `tf.RaggedTensor` of the same sequences
gives the same averages, row by row.

    python examples/packed_sequences.py
"""

import numpy as np
import tensorflow as tf

import causal_moving_avg as cma


def pack(sequences, row_steps):
    """Greedily packs [length, channels] sequences into rows of `row_steps` steps; returns the
    packed batch, the ids (a sequence's index, -1 for the rows' unused tail) and the placements."""
    channels = sequences[0].shape[1]
    rows, ids, placements = [], [], []
    for k, sequence in enumerate(sequences):
        if not rows or rows[-1][1] + len(sequence) > row_steps:
            rows.append([np.zeros((row_steps, channels), np.float32), 0])
            ids.append(np.full(row_steps, -1, np.int32))
        row = rows[-1]
        start = row[1]
        row[0][start : start + len(sequence)] = sequence
        ids[-1][start : start + len(sequence)] = k
        placements.append((len(rows) - 1, start, len(sequence)))
        row[1] += len(sequence)
    return np.stack([r[0] for r in rows]), np.stack(ids), placements


def main():
    rng = np.random.default_rng(0)
    sequences = [rng.standard_normal((int(rng.integers(1, 120)), 2)).astype(np.float32) for _ in range(40)]
    packed, ids, placements = pack(sequences, row_steps=512)
    averages = cma.causal_moving_avg(packed, window=8, edge="partial", segment_ids=ids)
    batch = tf.RaggedTensor.from_row_lengths(np.concatenate(sequences), [len(s) for s in sequences])
    ragged = cma.causal_moving_avg(batch, window=8, edge="partial")
    worst = 0.0
    for k, (row, start, length) in enumerate(placements):
        from_packed = averages[row, start : start + length].numpy()
        worst = max(worst, float(np.abs(from_packed - ragged[k].numpy()).max(initial=0.0)))
    print(f"{len(sequences)} sequences in {packed.shape[0]} packed rows of {packed.shape[1]} steps")
    print(f"packed vs ragged, largest difference: {worst}")


if __name__ == "__main__":
    main()
