"""A Keras model of your own, trained with ``model.fit`` on scikit-learn's bundled digits and
tuned by searchsvc.

The three lines that matter: ``resume(model)`` before fit (PBT, retries and resumed studies
continue from the trial's checkpoint), the step budget as ``epochs``, and the callback.
"""

from __future__ import annotations

import keras
from sklearn.datasets import load_digits

from searchsvc import sdk
from searchsvc.integrations.keras import SearchsvcCallback, resume


def build(lr: float, width: int) -> keras.Model:
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(width, activation="relu"),
                              keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr, momentum=0.9),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def train(config: dict) -> None:
    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    model = build(config["lr"], config["width"])
    initial_epoch = resume(model)
    model.fit(x[:1400], y[:1400], validation_data=(x[1400:], y[1400:]), batch_size=64,
              epochs=sdk.max_steps(5), initial_epoch=initial_epoch, verbose=0,
              callbacks=[SearchsvcCallback()])


if __name__ == "__main__":
    print(sdk.run_locally(train, {"lr": 0.05, "width": 32}, metric="val_loss", max_steps=3))
