"""The op under XLA (jit_compile=True): one custom call into the library's own kernels, so the
compiled program computes the eager op's bits."""

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

import causal_moving_avg as cma
from conftest import DTYPE_NAMES, EDGES, reference_moving_avg, rtol

DTYPES = [tf.as_dtype(name) for name in DTYPE_NAMES]

pytestmark = pytest.mark.skipif(
    not cma.build_info()["xla"],
    reason=f"built without the XLA kernel: TensorFlow {tf.__version__}'s wheel lacks what it needs",
)
# (shape, axis): one sequence, channels last, steps last, steps first, a 4-D tensor, and one
# large enough for the CPU handler to split its work over XLA's thread pool.
LAYOUTS = [((500,), 0), ((3, 300, 4), 1), ((3, 300, 4), -1), ((40, 2, 3), 0), ((2, 3, 70, 5), 2)]
WINDOWS = [1, 3, 40, 1000, 10**6]  # the last two longer than most sequences here
LARGE = ((4, 40_000, 3), 1)


def with_non_finite(x):
    x = x.copy()
    x.flat[7::97] = np.inf
    x.flat[50::211] = -np.inf
    x.flat[11::301] = np.nan
    return x


def jit(fn, **kwargs):
    return tf.function(fn, jit_compile=True, **kwargs)


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_jit_compile_gives_the_eager_ops_bits(dtype, edge):
    rng = np.random.default_rng(1)
    inputs = [tf.constant(with_non_finite(rng.standard_normal(shape) * 10), dtype) for shape, _ in LAYOUTS]
    large = tf.constant(with_non_finite(rng.standard_normal(LARGE[0])), dtype)

    @jit
    def compiled(tensors, large):
        small = [
            cma.causal_moving_avg(t, w, axis, edge)
            for t, (_, axis) in zip(tensors, LAYOUTS, strict=True)
            for w in WINDOWS
        ]
        return small, cma.causal_moving_avg(large, 100, LARGE[1], edge)

    small, big = compiled(inputs, large)
    pairs = [(t, axis, w) for t, (_, axis) in zip(inputs, LAYOUTS, strict=True) for w in WINDOWS]
    pairs.append((large, LARGE[1], 100))
    finfo = ml_dtypes.finfo(dtype.as_numpy_dtype)
    for got, (x, axis, window) in zip([*small, big], pairs, strict=True):
        eager = cma.causal_moving_avg(x, window, axis, edge)
        assert got.dtype == dtype and got.shape == x.shape
        got64 = tf.cast(got, tf.float64).numpy()
        np.testing.assert_array_equal(got64, tf.cast(eager, tf.float64).numpy(), err_msg=f"{axis} {window}")
        # And the definition, so both cannot be wrong together.
        quantized = tf.cast(x, tf.float64).numpy()
        expected = reference_moving_avg(quantized, window, axis, edge)
        scale = reference_moving_avg(np.abs(quantized), window, axis, edge)
        finite = np.isfinite(expected)
        np.testing.assert_array_equal(got64[~finite], expected[~finite])
        bound = rtol(dtype) * scale + float(finfo.tiny)
        assert np.all(np.abs(got64[finite] - expected[finite]) <= bound[finite]), (axis, window)


@pytest.mark.parametrize("window", [2, 33, 1000])
def test_huge_and_tiny_values_under_jit_compile(window):
    # Huge values stay inside their windows (no Inf carried on, no overflow of float64 sums);
    # tiny float64 values keep their bits (no flush to zero).
    cases = []  # (x, the reference's scale: a power of two that keeps its float64 sums finite)
    for dtype, huge in [(np.float32, 1e30), (np.float64, 1.5e308)]:
        x = np.ones((2, 5000), dtype)
        x[0, 10:13] = huge
        x[1, 100] = -huge
        cases.append((x, 2.0**-64))
    tiny = [
        [1e-300] * 4,
        [3e-289, 0.0, 0.0, 0.0],
        [1e-300, 3e-300, np.nan, 2e-300],
        [1.30953547e-300, np.inf, 0, 0],
    ]
    cases.append((np.array(tiny), 1.0))
    compiled = jit(lambda t: cma.causal_moving_avg(t, window, axis=1))
    for x, scale in cases:
        got = compiled(x).numpy()
        np.testing.assert_array_equal(got, cma.causal_moving_avg(x, window, axis=1).numpy())
        expected = reference_moving_avg(x.astype(np.float64) * scale, window, 1) / scale
        magnitude = reference_moving_avg(np.abs(x.astype(np.float64)) * scale, window, 1) / scale
        # One rounding, plus the running sum's documented error: 2^-50 of the largest value that
        # passed through its span (here, of the row).
        passed_through = np.nanmax(np.where(np.isinf(x), 0, np.abs(x)), axis=1, keepdims=True)
        finite = np.isfinite(expected)
        np.testing.assert_array_equal(got[~finite], expected[~finite])
        bound = np.broadcast_to(rtol(x.dtype) * magnitude + 2.0**-50 * passed_through, x.shape)
        assert np.all(np.abs(got[finite] - expected[finite]) <= bound[finite])


def test_compiled_program_calls_the_kernel():
    compiled = jit(lambda t: cma.causal_moving_avg(t, 1000, axis=1, edge="partial"))
    x = tf.zeros((2, 4096, 8))
    for stage in ("hlo", "optimized_hlo"):
        hlo = compiled.experimental_get_compiler_ir(x)(stage=stage)
        assert hlo.count('custom_call_target="causal_moving_avg"') == 1, hlo
        assert "API_VERSION_TYPED_FFI" in hlo
        for loop_or_reduction in (" while(", " reduce(", " reduce-window(", " convolution("):
            assert loop_or_reduction not in hlo, (stage, loop_or_reduction)


def test_shapes_known_only_at_run_time():
    compiled = jit(
        lambda t: cma.causal_moving_avg(t, 2**40, axis=1, edge="partial"),
        input_signature=[tf.TensorSpec([None, None, None], tf.float64)],
    )
    for shape in [(3, 300, 1), (1, 7, 5), (2, 1, 2)]:
        x = np.random.randn(*shape)
        got = compiled(x).numpy()
        np.testing.assert_array_equal(got, cma.causal_moving_avg(x, 2**40, axis=1, edge="partial").numpy())
        np.testing.assert_allclose(got, reference_moving_avg(x, 2**40, 1, "partial"), rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1])
def test_bounded_dynamic_dimension(axis):
    """tf.boolean_mask gives XLA a dimension whose size is known only at run time (with a bound):
    the steps axis when axis=0, another axis when axis=1."""
    x = np.random.randn(50, 30).astype(np.float32)
    keep = np.random.rand(50) < 0.6

    @jit
    def compiled(t, mask):
        kept = tf.boolean_mask(t, mask)
        return cma.causal_moving_avg(kept, 4, axis=axis), tf.shape(kept)

    y, shape = compiled(x, keep)
    assert shape.numpy().tolist() == [keep.sum(), 30]
    np.testing.assert_array_equal(y.numpy(), cma.causal_moving_avg(x[keep], 4, axis=axis).numpy())


@pytest.mark.parametrize("shape", [(2, 0, 3), (0, 5), (0,)])
def test_empty_tensors(shape):
    y = jit(lambda t: cma.causal_moving_avg(t, 3, axis=-1))(tf.zeros(shape))
    assert y.shape == shape


def test_axis_out_of_range_fails_at_compile_time_with_a_clear_error():
    # The raw op (the Python API would check the axis first) on a tensor whose rank is unknown
    # while tracing: only XLA's compile sees that axis 5 does not exist.
    raw = tf.load_op_library(cma.library_path())
    compiled = jit(
        lambda t: raw.causal_moving_avg(t, window=3, axis=5),
        input_signature=[tf.TensorSpec(None, tf.float32)],
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 5 is out of range for x of rank 2"):
        compiled(tf.zeros((2, 4)))


def test_the_op_stays_in_the_graph_under_xla():
    def f(t):
        return cma.causal_moving_avg(t, window=3)

    spec = tf.TensorSpec([2, 50, 3], tf.float32)
    for compiled in (tf.function(f), jit(f)):
        ops = compiled.get_concrete_function(spec).graph.get_operations()
        assert [op.type for op in ops].count("CausalMovingAvg") == 1


def test_a_constant_to_autodiff_under_jit_compile():
    x = tf.Variable(np.random.randn(4, 64, 3).astype(np.float32))

    @jit
    def grads():
        with tf.GradientTape(persistent=True) as tape:
            only_op = tf.reduce_sum(cma.causal_moving_avg(x, window=3))
            mixed = tf.reduce_sum(cma.causal_moving_avg(x, window=3) + 2.0 * x)
        return tape.gradient(only_op, x, unconnected_gradients="zero"), tape.gradient(mixed, x)

    only_op, mixed = grads()
    np.testing.assert_array_equal(only_op.numpy(), np.zeros(x.shape))
    np.testing.assert_array_equal(mixed.numpy(), np.full(x.shape, 2.0))


SERVE = """
import sys, numpy as np, tensorflow as tf
import causal_moving_avg  # loads the op library, as any SavedModel holding the op needs
loaded = tf.saved_model.load(sys.argv[1])
np.save(sys.argv[2], loaded.smooth(tf.constant(np.load(sys.argv[3]))).numpy())
"""


def test_saved_model_of_a_jit_compiled_function_serves_in_a_fresh_process(tmp_path):
    class Smoother(tf.Module):
        @tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None, None, 3], tf.float32)])
        def smooth(self, x):
            return cma.causal_moving_avg(x, window=6, edge="partial")

    tf.saved_model.save(Smoother(), str(tmp_path / "model"))
    x = np.random.randn(2, 400, 3).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    subprocess.run(
        [
            sys.executable,
            "-c",
            SERVE,
            str(tmp_path / "model"),
            str(tmp_path / "y.npy"),
            str(tmp_path / "x.npy"),
        ],
        check=True,
        capture_output=True,
    )
    np.testing.assert_array_equal(
        np.load(tmp_path / "y.npy"), cma.causal_moving_avg(x, 6, edge="partial").numpy()
    )


LATE_IMPORT = """
import numpy as np, tensorflow as tf
# An XLA compile first: XLA builds its JIT kernels from what is registered at this moment.
assert tf.function(lambda t: t * 2.0, jit_compile=True)(tf.ones(3)).numpy().tolist() == [2.0] * 3
import causal_moving_avg as cma
x = np.random.randn(2, 100, 3)
compiled = tf.function(lambda t: cma.causal_moving_avg(t, 5), jit_compile=True)
assert "causal_moving_avg" in compiled.experimental_get_compiler_ir(x)(stage="hlo")
assert np.array_equal(compiled(x).numpy(), cma.causal_moving_avg(x, 5).numpy())
print("late import ok")
"""


def test_library_imported_after_an_xla_compile():
    result = subprocess.run([sys.executable, "-c", LATE_IMPORT], capture_output=True, text=True)
    assert result.returncode == 0 and "late import ok" in result.stdout, result.stderr[-3000:]


def test_host_handler_registered():
    info = cma.build_info()
    assert "Host" in info["xla_platforms"]
    assert info["xla_registration_failures"] == []
