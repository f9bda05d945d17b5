"""The Keras 3 layer: a drop-in replacement for the frozen causal Conv1D trick."""

import keras

from causal_moving_avg._checks import check_call


@keras.saving.register_keras_serializable(package="causal_moving_avg")
class CausalMovingAverage(keras.layers.Layer):
    """Causal moving average along `axis` (default: the steps axis of [batch, steps, channels]).

    Same as a frozen ``Conv1D(kernel_size=window, padding='causal', use_bias=False)`` with every
    weight ``1/window`` applied to each channel, with no weights and no gradient (a constant to
    autodiff). Computes in the layer's compute dtype, so mixed-precision policies apply. Inside
    XLA-compiled models (``jit_compile=True``, Keras's default on GPUs) the op's own kernels run.

    Over a stream (chunks of one long series, or one step at a time), call it with the state of
    the previous call: ``y, state = layer(chunk, initial_state=state, return_state=True)``
    (``initial_state=None`` starts the stream); over packed sequences, with their ids:
    ``layer(x, segment_ids=ids)``; see ``causal_moving_avg``. A Keras mask (``Masking``,
    ``Embedding(mask_zero=True)``) passes through unchanged: the average is causal, so padding
    after a sequence cannot change its outputs.
    """

    def __init__(self, window=3, axis=1, edge="zeros", **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        # No input yet: window and edge are checked, axis as far as it can be (None: per input).
        self.window, self.edge, self.axis = check_call(window, edge, axis)

    def build(self, input_shape):
        # The input's rank is known now: a clear error for a scalar or an axis the input lacks. Its
        # dtype is checked when called, after the cast to the compute dtype.
        check_call(self.window, self.edge, self.axis, len(input_shape))
        super().build(input_shape)

    def call(self, inputs, initial_state=None, return_state=False, segment_ids=None):
        # Imported here, not with the module: Keras registers this layer while TensorFlow may still
        # be importing (TensorFlow imports Keras), before the op library can load.
        from causal_moving_avg._api import causal_moving_avg  # noqa: PLC0415

        x = keras.ops.cast(inputs, self.compute_dtype)
        return causal_moving_avg(
            x,
            window=self.window,
            axis=self.axis,
            edge=self.edge,
            initial_state=initial_state,
            return_state=return_state,
            segment_ids=segment_ids,
        )

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "window": self.window, "axis": self.axis, "edge": self.edge}
