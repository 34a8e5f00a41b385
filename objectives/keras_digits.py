"""A KerasTuner hypermodel on scikit-learn's bundled digits (no download), written the way
KerasTuner's own documentation writes one: ``build(hp)`` declares its hyperparameters inline.

Run it with ``backend: keras_tuner`` (spaces/keras_digits.yaml); ``load_data`` gives the
backend its training and validation split.
"""

from __future__ import annotations

import functools

import keras
import numpy as np


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


@functools.lru_cache(maxsize=1)
def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Standardised digits, split 80/20 with a fixed seed (the PyTorch objective's split)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        x.astype(np.float32), y, test_size=0.2, random_state=0, stratify=y)
    mean, std = x_train.mean(0), x_train.std(0)
    std = np.where(std > 1e-3, std, 1.0)
    return (x_train - mean) / std, y_train, (x_val - mean) / std, y_val
