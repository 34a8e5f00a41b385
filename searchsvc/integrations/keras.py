"""Keras ``model.fit``: a callback that reports each epoch's logs, saves the model's weights
through searchsvc's checkpoint, and a restore that puts them back. The ``keras_tuner``
backend trains with this same callback. ::

    from searchsvc.integrations.keras import SearchsvcCallback, resume

    initial_epoch = resume(model)  # 0, or the epochs its restored weights have seen
    model.fit(x, y, validation_data=(xv, yv), epochs=sdk.max_steps(10),
              initial_epoch=initial_epoch, callbacks=[SearchsvcCallback()])

The trial's seed reaches Keras before the objective runs (the worker seeds Python, NumPy and
TensorFlow); with ``keras.utils.set_random_seed`` the objective can seed again. What is
restored is the model's weights and its optimizer's state. When the checkpoint comes from a
trial compiled with another learning rate (PBT exploited it and explored a new one), the
optimizer keeps this trial's learning rate; restoring a trial's own checkpoint keeps the saved
one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import keras

from searchsvc.integrations._common import numbers
from searchsvc.worker.sdk import report, restored_files

WEIGHTS_FILE = "model.weights.h5"
EPOCH_FILE = "epoch.json"


class SearchsvcCallback(keras.callbacks.Callback):
    """Report every epoch's logs (``loss``, ``val_loss``, compiled metrics) with ``epoch``
    (epochs completed) as the step; when the study keeps checkpoints, the model's weights and
    that epoch ride with the report. ``metrics``: report only these names (default: all)."""

    def __init__(self, metrics: Sequence[str] | None = None):
        super().__init__()
        self.metrics = None if metrics is None else list(metrics)
        self.configured: float | None = None

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self.configured = _CONFIGURED.pop(id(self.model), _learning_rate(self.model))

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        values = numbers(logs or {}, self.metrics)
        values["epoch"] = epoch + 1

        def save(folder: Path) -> None:
            self.model.save_weights(folder / WEIGHTS_FILE)
            (folder / EPOCH_FILE).write_text(json.dumps({
                "epoch": epoch + 1, "configured_learning_rate": self.configured}))

        report(values, files=save)


def resume(model: keras.Model) -> int:
    """Load the weights of the checkpoint this trial continues from into ``model`` (built, as
    saved) and return the epochs they had trained, for ``fit(initial_epoch=...)``; 0 when the
    trial starts afresh."""
    configured = _learning_rate(model)
    _CONFIGURED[id(model)] = configured
    folder = restored_files()
    if folder is None or not (folder / WEIGHTS_FILE).exists():
        return 0
    model.load_weights(folder / WEIGHTS_FILE)
    saved = json.loads((folder / EPOCH_FILE).read_text())
    if configured is not None and saved.get("configured_learning_rate") != configured:
        model.optimizer.learning_rate = configured
    return int(saved["epoch"])


# The learning rate each model was compiled with, noted by resume() before loading a checkpoint
# (which brings the saving trial's along) for the callback to save with the next checkpoint.
_CONFIGURED: dict[int, float | None] = {}


def _learning_rate(model: keras.Model) -> float | None:
    """The learning rate ``model``'s optimizer holds now; None when not compiled or when it
    follows a schedule."""
    optimizer = getattr(model, "optimizer", None)
    try:
        return float(optimizer.learning_rate) if optimizer is not None else None
    except (TypeError, ValueError):
        return None
