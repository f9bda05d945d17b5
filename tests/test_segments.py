"""Packed and ragged sequences: windows that restart at each sequence's start.

A sequence begins at step 0 and wherever `segment_ids` differs from the previous step's; every
output averages only its own sequence's samples, with the edge rule applied at the sequence's start.
The reference cuts the series into its sequences and judges each against exact sums (the bound of
tests/test_accuracy.py). Every path gives the same bits: eager, tf.function, XLA, NumPy.
"""

import numpy as np
import pytest
import tensorflow as tf
from test_accuracy import NUMPY_DTYPES, as_dtype, violations

import causal_moving_avg as cma
from conftest import EDGES, jit_compile_values, reference_moving_avg

DTYPES = list(NUMPY_DTYPES)


def random_ids(rng, rows, steps, mean_length):
    """Ids of runs of random lengths (1-step runs included); an id may come back to an earlier
    value, which starts a new sequence too."""
    ids = np.zeros((rows, steps), np.int64)
    for row in range(rows):
        t, value = 0, 0
        while t < steps:
            length = int(rng.integers(1, 2 * mean_length))
            value = (value + int(rng.integers(1, 3))) % 3  # 0, 1, 2: earlier values come back
            ids[row, t : t + length] = value
            t += length
    return ids


def sequences_of(ids_row):
    """[begin, end) of each sequence of one row."""
    starts = [0, *np.nonzero(ids_row[1:] != ids_row[:-1])[0] + 1, len(ids_row)]
    return list(zip(starts[:-1], starts[1:], strict=True))


def same_bits(a, b):
    """Equal bits, NaN outputs included (every NaN output is the positive quiet NaN)."""
    as_bytes = [np.ascontiguousarray(v).view(np.uint8) for v in (a, b)]
    return a.shape == b.shape and np.array_equal(*as_bytes)


def check_against_exact_sums(y, x, ids, window, edge, dtype):
    """y, x: [rows, steps, channels]; each sequence judged alone (exactly summed windows)."""
    for row in range(x.shape[0]):
        for begin, end in sequences_of(ids[row]):
            lanes_x = np.moveaxis(np.asarray(x[row, begin:end], np.float64), 0, 1)
            lanes_y = np.moveaxis(np.asarray(y[row, begin:end]).astype(np.float64), 0, 1)
            assert violations(lanes_y, lanes_x, window, edge, dtype) == [], (row, begin, end)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize(
    ("window", "mean_length", "channels"),
    # 4 and 8 channels run sums held in vector registers; sequences shorter and longer than W.
    [(1, 5, 2), (3, 20, 2), (40, 8, 2), (300, 30, 2), (100, 60, 8), (700, 300, 4)],
)
def test_packed_sequences_match_each_sequence_alone(dtype, edge, window, mean_length, channels):
    rng = np.random.default_rng([window, mean_length, len(dtype), len(edge)])
    x = rng.normal(size=(3, 400, channels)) * 10.0 ** rng.integers(-3, 4, size=(3, 1, channels))
    x = as_dtype(x, dtype)
    ids = random_ids(rng, 3, 400, mean_length)
    y = cma.causal_moving_avg(x, window, edge=edge, segment_ids=ids).numpy()
    check_against_exact_sums(y, x, ids, window, edge, dtype)
    # The same bits from NumPy, with int32 ids too.
    assert np.array_equal(
        y, cma.numpy_causal_moving_avg(x, window, edge=edge, segment_ids=ids), equal_nan=True
    )
    y32 = cma.causal_moving_avg(x, window, edge=edge, segment_ids=ids.astype(np.int32)).numpy()
    assert np.array_equal(y, y32, equal_nan=True)


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize(
    ("dtype", "channels", "window"),
    [
        ("float64", 3, 25),
        ("float32", 1, 3),
        ("float32", 1, 16),
        ("float32", 1, 20),
        ("float16", 1, 7),
        ("bfloat16", 1, 2),
    ],
)
def test_each_sequence_equals_a_call_on_it_alone(edge, dtype, channels, window):
    # Values 2^60 apart cancel, so the float64 sums round and their order shows in the last bit;
    # -0.0 runs show how a sum starts.
    rng = np.random.default_rng([window, channels])
    big = 1e3 if dtype == "float16" else 1e18
    x = rng.normal(size=(2, 500, channels)) * np.where(rng.random((2, 500, channels)) < 0.2, big, 1.0)
    x[:, 100:140] = -0.0
    x = as_dtype(x, dtype)
    ids = random_ids(rng, 2, 500, 12)
    y = cma.numpy_causal_moving_avg(x, window, edge=edge, segment_ids=ids)
    for row in range(2):
        for begin, end in sequences_of(ids[row]):
            alone = cma.numpy_causal_moving_avg(x[row : row + 1, begin:end], window, edge=edge)
            assert np.array_equal(y[row : row + 1, begin:end].view(np.uint8), alone.view(np.uint8)), (
                row,
                begin,
                end,
            )


def one_lane_with_specials(rng, steps, dtype, share, negative_zeros):
    """[1, steps, 1] of values over seven orders of magnitude, `share` of them the values real
    series carry (NaN, Inf, the largest finite value, sentinels, subnormals, signed zeros), and a
    run of -0.0 (how a sum starts shows in its sign)."""
    finite_max = float(np.finfo(np.float16).max) if dtype == "float16" else 3e38
    specials = [np.nan, np.inf, -np.inf, finite_max, 1e9, -999999.0, 1e-40, 0.0, -0.0]
    x = rng.normal(size=(1, steps, 1)) * 10.0 ** rng.integers(-3, 4, size=(1, steps, 1))
    picked = rng.random((1, steps, 1)) < share
    x[picked] = rng.choice(specials, size=int(picked.sum()))
    x[0, negative_zeros] = -0.0
    return as_dtype(x, dtype)


def assert_each_sequence_is_a_call_on_it_alone(x, ids, window, edge):
    """x: [1, steps, 1]. Each sequence's NumPy outputs have the bits of a NumPy call on it alone, and
    the eager op (int32 ids) the bits of NumPy's."""
    y = cma.numpy_causal_moving_avg(x, window, edge=edge, segment_ids=ids)
    for begin, end in sequences_of(ids[0]):
        alone = cma.numpy_causal_moving_avg(x[:, begin:end], window, edge=edge)
        assert same_bits(y[:, begin:end], alone), (begin, end)
    eager = cma.causal_moving_avg(x, window, edge=edge, segment_ids=ids.astype(np.int32)).numpy()
    assert same_bits(eager, y)


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize(
    ("dtype", "window"), [("float32", 2), ("float32", 3), ("float32", 16), ("float16", 7)]
)
def test_a_long_row_of_long_sequences_equals_each_sequence_alone(edge, dtype, window):
    # One channel, sequences of tens to thousands of steps (a start on every kind of step: near
    # multiples of 2^10 and 2^12 too, and sequences shorter than W among them), with spikes,
    # sentinels, NaN/Inf and -0.0 runs: each sequence's bits are those of a call on it alone.
    rng = np.random.default_rng([window, len(edge), len(dtype), 11])
    steps = 60_000
    cuts = set(np.cumsum(rng.integers(20, 3000, size=80)).tolist())
    for k in range(1, 14):
        cuts.update(4096 * k + d for d in (-window - 1, -1, 0, 1, window))
        cuts.update(1024 * k + d for d in rng.integers(-20, 20, size=2).tolist())
    cuts.update([31000, 31001, 31002])  # 1-step sequences
    starts = sorted(c for c in cuts if 0 < c < steps)
    ids = np.zeros((1, steps), np.int64)
    for begin in starts:
        ids[0, begin:] += 1 + (begin % 2)
    x = one_lane_with_specials(rng, steps, dtype, 0.005, slice(8190, 8300))
    assert_each_sequence_is_a_call_on_it_alone(x, ids, window, edge)


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize(
    ("dtype", "window"),
    [("float32", 1), ("float32", 16), ("float32", 1024), ("float16", 5), ("bfloat16", 3), ("bfloat16", 300)],
)
def test_a_long_row_of_short_and_long_sequences_equals_each_sequence_alone(edge, dtype, window):
    # One channel, long enough to be cut across threads (mid-sequence): runs of 1- to 3-step
    # sequences between sequences of hundreds of steps, and the values real series carry.
    rng = np.random.default_rng([window, len(edge), len(dtype), 7])
    steps = 70_000
    ids = np.zeros((1, steps), np.int64)
    t, value = 0, 0
    while t < steps:
        length = int(rng.integers(100, 400)) if rng.random() < 0.1 else int(rng.integers(1, 4))
        value = (value + int(rng.integers(1, 3))) % 3
        ids[0, t : t + length] = value
        t += length
    x = one_lane_with_specials(rng, steps, dtype, 0.02, slice(5000, 5400))
    assert_each_sequence_is_a_call_on_it_alone(x, ids, window, edge)


def test_a_nan_stays_in_its_sequence():
    x = np.ones((1, 30, 1), np.float32)
    x[0, 9, 0] = np.nan
    ids = np.repeat([[0, 1, 2]], 10, axis=1)  # sequences [0, 10), [10, 20), [20, 30)
    y = cma.causal_moving_avg(x, 5, edge="partial", segment_ids=ids).numpy()[0, :, 0]
    assert np.isnan(y[9]) and np.isfinite(y[:9]).all()
    assert (y[10:] == 1.0).all()  # the next sequence is clean from its first step


def test_rank_one_and_other_axes():
    rng = np.random.default_rng(2)
    x = rng.normal(size=60)
    ids = np.repeat(np.arange(6), 10)
    y = cma.causal_moving_avg(x, 4, segment_ids=ids).numpy()
    expected = np.concatenate([reference_moving_avg(x[k : k + 10], 4, 0) for k in range(0, 60, 10)])
    np.testing.assert_allclose(y, expected, rtol=1e-13, atol=1e-15)
    x3 = rng.normal(size=(50, 3, 2))  # averaged along axis 0: ids of shape [50]
    ids0 = np.repeat([7, 8], 25)
    y3 = cma.causal_moving_avg(x3, 3, axis=0, edge="partial", segment_ids=ids0).numpy()
    expected3 = np.concatenate(
        [reference_moving_avg(x3[:25], 3, 0, "partial"), reference_moving_avg(x3[25:], 3, 0, "partial")]
    )
    np.testing.assert_allclose(y3, expected3, rtol=1e-13, atol=1e-15)
    x4 = rng.normal(size=(2, 3, 40))  # the last axis: ids of x's whole shape
    ids4 = np.repeat(np.arange(4), 10)[None, None].repeat(2, 0).repeat(3, 1)
    y4 = cma.causal_moving_avg(x4, 6, axis=-1, segment_ids=ids4).numpy()
    expected4 = np.concatenate(
        [reference_moving_avg(x4[..., k : k + 10], 6, 2) for k in range(0, 40, 10)], axis=-1
    )
    np.testing.assert_allclose(y4, expected4, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tf_function_and_xla_give_the_eager_bits(dtype):
    rng = np.random.default_rng(3)
    x = as_dtype(rng.normal(size=(4, 300, 3)), dtype)
    ids = random_ids(rng, 4, 300, 20).astype(np.int32)
    eager = cma.causal_moving_avg(x, 17, edge="partial", segment_ids=ids).numpy()
    for jit_compile in jit_compile_values():
        fn = tf.function(
            lambda a, i: cma.causal_moving_avg(a, 17, edge="partial", segment_ids=i), jit_compile=jit_compile
        )
        assert np.array_equal(fn(tf.constant(x), tf.constant(ids)).numpy(), eager, equal_nan=True), (
            jit_compile
        )


def test_no_gradient_flows_to_x():
    x = tf.Variable(np.ones((1, 10, 2), np.float32))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(cma.causal_moving_avg(x, 3, segment_ids=np.zeros((1, 10), np.int32)))
    assert tape.gradient(loss, x) is None


# --- Ragged tensors -------------------------------------------------------------------------------


@pytest.mark.parametrize("edge", EDGES)
def test_a_ragged_batch_averages_each_row_alone(edge):
    rng = np.random.default_rng(4)
    lengths = [10, 0, 1, 37, 5]
    ragged = tf.RaggedTensor.from_row_lengths(rng.normal(size=(sum(lengths), 3)).astype(np.float32), lengths)
    y = cma.causal_moving_avg(ragged, 6, edge=edge)
    assert isinstance(y, tf.RaggedTensor) and y.dtype == tf.float32
    assert y.row_lengths().numpy().tolist() == lengths
    for row, length in enumerate(lengths):
        expected = (
            reference_moving_avg(ragged[row].numpy()[None], 6, 1, edge)[0] if length else np.zeros((0, 3))
        )
        np.testing.assert_allclose(y[row].numpy(), expected, rtol=1e-6, atol=1e-6)
    jitted = tf.function(lambda r: cma.causal_moving_avg(r, 6, edge=edge), jit_compile=True)(ragged)
    assert np.array_equal(jitted.flat_values.numpy(), y.flat_values.numpy())


def test_ragged_along_a_uniform_axis_and_refusals():
    rng = np.random.default_rng(5)
    ragged = tf.RaggedTensor.from_row_lengths(rng.normal(size=(12, 8)), [5, 7])
    y = cma.causal_moving_avg(ragged, 3, axis=2)  # along each step's 8 values
    np.testing.assert_allclose(
        y.flat_values.numpy(), reference_moving_avg(ragged.flat_values.numpy(), 3, 1), rtol=1e-13
    )
    with pytest.raises(ValueError, match="axis 0, its batch axis"):
        cma.causal_moving_avg(ragged, 3, axis=0)
    nested = tf.RaggedTensor.from_row_lengths(tf.RaggedTensor.from_row_lengths(np.ones(6), [2, 4]), [1, 1])
    with pytest.raises(ValueError, match="ragged in turn"):
        cma.causal_moving_avg(nested, 3, axis=1)
    with pytest.raises(ValueError, match="its rows are its sequences"):
        cma.causal_moving_avg(ragged, 3, segment_ids=np.zeros((2, 7), np.int32))


# --- Bad input --------------------------------------------------------------------------------------


def test_bad_ids_are_refused_with_a_clear_error():
    x = np.zeros((4, 20, 3), np.float32)
    with pytest.raises(ValueError, match=r"segment_ids has shape \(4, 19\)"):
        cma.causal_moving_avg(x, 3, segment_ids=np.zeros((4, 19), np.int32))
    with pytest.raises(ValueError, match="segment_ids has shape"):
        cma.numpy_causal_moving_avg(x, 3, segment_ids=np.zeros((4, 20, 3), np.int32))
    with pytest.raises(TypeError, match="int32 or int64"):
        cma.causal_moving_avg(x, 3, segment_ids=np.zeros((4, 20), np.float32))
    with pytest.raises(TypeError, match="int32 or int64"):
        cma.numpy_causal_moving_avg(x, 3, segment_ids=np.zeros((4, 20), np.uint8))
    with pytest.raises(ValueError, match="cannot be combined"):
        cma.causal_moving_avg(x, 3, segment_ids=np.zeros((4, 20), np.int32), return_state=True)
    fn = tf.function(
        lambda a, i: cma.causal_moving_avg(a, 3, segment_ids=i),
        input_signature=[tf.TensorSpec([None, None, 3]), tf.TensorSpec([None, None], tf.int32)],
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="segment_ids has shape"):
        fn(tf.zeros((4, 20, 3)), tf.zeros((4, 21), tf.int32))


# --- The Keras layer keeps masks ------------------------------------------------------------------


def test_the_layer_passes_a_mask_through_and_takes_ids():
    import keras

    layer = cma.CausalMovingAverage(window=3)
    x = np.array([[[1.0], [2.0], [3.0], [0.0], [0.0]]], np.float32)
    masked = keras.layers.Masking(mask_value=0.0)(x)
    mask = keras.layers.Masking(mask_value=0.0).compute_mask(x)
    assert np.array_equal(np.asarray(layer.compute_mask(masked, mask)), np.asarray(mask))
    ids = np.array([[0, 0, 1, 1, 1]], np.int32)
    y = layer(x, segment_ids=ids)
    np.testing.assert_allclose(np.asarray(y)[0, :, 0], [1 / 3, 1.0, 1.0, 1.0, 1.0], rtol=1e-6)


def test_a_masked_model_trains_and_saves(tmp_path):
    import keras

    rng = np.random.default_rng(6)
    x = rng.normal(size=(16, 12, 2)).astype(np.float32)
    x[:8, 8:] = 0.0  # padding after shorter sequences
    target = rng.normal(size=(16, 1)).astype(np.float32)
    inputs = keras.Input((12, 2))
    masked = keras.layers.Masking(mask_value=0.0)(inputs)
    averaged = cma.CausalMovingAverage(window=3)(masked)
    outputs = keras.layers.Dense(1)(keras.layers.LSTM(4)(averaged))
    model = keras.Model(inputs, outputs)
    assert model.layers[2].supports_masking
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, target, epochs=3, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    path = tmp_path / "masked.keras"
    model.save(path)
    reloaded = keras.models.load_model(path)
    np.testing.assert_allclose(
        reloaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6
    )
