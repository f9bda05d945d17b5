"""A small training run with the CausalMovingAverage layer, for tests/test_serving_data_distribute.py.

    python distributed_training.py single        # one device: a custom training loop
    python distributed_training.py mirrored      # MirroredStrategy over two logical CPUs, model.fit
    python distributed_training.py fit_single    # one device, model.fit (the reference for mirrored)
    TF_CONFIG=... python distributed_training.py multiworker   # one worker of a MultiWorkerMirroredStrategy

Prints the per-step losses as JSON on its last line. MultiWorkerMirroredStrategy runs a custom
training loop (strategy.run over experimental_distribute_dataset), not Keras's fit.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

GLOBAL_BATCH = 8
STEPS = 5


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((GLOBAL_BATCH * STEPS, 16, 2)).astype(np.float32)
    y = rng.standard_normal((GLOBAL_BATCH * STEPS, 1)).astype(np.float32)
    return x, y


def build_model():
    import keras

    import causal_moving_avg as cma

    keras.utils.set_random_seed(0)
    inputs = keras.Input((16, 2))
    smoothed = cma.CausalMovingAverage(window=3)(inputs)
    outputs = keras.layers.Dense(1)(keras.layers.Flatten()(smoothed))
    return keras.Model(inputs, outputs)


def custom_loop(strategy):
    import keras

    with strategy.scope():
        model = build_model()
        optimizer = keras.optimizers.SGD(0.05)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    dataset = tf.data.Dataset.from_tensor_slices(data()).batch(GLOBAL_BATCH).with_options(options)

    @tf.function
    def step(x, y):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                per_example = tf.reduce_mean(tf.square(model(x, training=True) - y), axis=-1)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
            return loss

        return strategy.reduce("SUM", strategy.run(replica_step, args=(x, y)), axis=None)

    return [float(step(x, y)) for x, y in strategy.experimental_distribute_dataset(dataset)]


def fit(strategy):
    import keras

    with strategy.scope():
        model = build_model()
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    x, y = data()
    history = model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=2, shuffle=False, verbose=0)
    return history.history["loss"]


def main(mode):
    if mode == "mirrored":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        assert strategy.num_replicas_in_sync == 2
        losses = fit(strategy)
    elif mode == "fit_single":
        losses = fit(tf.distribute.get_strategy())
    elif mode == "multiworker":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        assert strategy.num_replicas_in_sync == 2
        losses = custom_loop(strategy)
    else:
        losses = custom_loop(tf.distribute.get_strategy())
    print(json.dumps(losses))


if __name__ == "__main__":
    main(sys.argv[1])
