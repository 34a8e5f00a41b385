"""A KerasTuner hypermodel on scikit-learn's bundled digits (no download), written the way
KerasTuner's own documentation writes one: ``build(hp)`` declares its hyperparameters inline.

Run it with ``backend: keras_tuner`` (spaces/keras_digits.yaml); ``load_data`` gives the
backend its training and validation split.
"""

from __future__ import annotations

import keras
import numpy as np

from objectives.digits_data import standardised_split


def build(hp):
    model = keras.Sequential()
    model.add(keras.Input(shape=(64,)))
    for i in range(hp.Int("num_layers", 1, 3)):
        model.add(keras.layers.Dense(
            units=hp.Int(f"units_{i}", min_value=16, max_value=256, step=16),
            activation=hp.Choice("activation", ["relu", "tanh"])))
    if hp.Boolean("dropout"):
        model.add(keras.layers.Dropout(rate=0.25))
    model.add(keras.layers.Dense(10, activation="softmax"))
    learning_rate = hp.Float("lr", min_value=1e-4, max_value=1e-1, sampling="log")
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The digits split the PyTorch objective uses (objectives/digits_data.py)."""
    return standardised_split()
