"""PyTorch Lightning: a callback that reports each validation's logged metrics, saves the
trainer's full state (weights, optimizer, loops) through searchsvc's checkpoint, and seeds
Lightning with the trial's seed. ::

    from searchsvc.integrations.lightning import SearchsvcCallback, resume_checkpoint

    trainer = pl.Trainer(max_epochs=sdk.max_steps(10), callbacks=[SearchsvcCallback()])
    trainer.fit(model, datamodule=data, ckpt_path=resume_checkpoint())

``resume_checkpoint()`` is the Lightning checkpoint this trial continues from (a resumed
study's interrupted trial, a retry, or the trial PBT exploited), or None. Restored, the
optimizer keeps its saved learning rate: a PBT study that explores the learning rate sets it
again in the module's ``on_load_checkpoint`` or ``configure_optimizers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytorch_lightning as pl

from searchsvc.integrations._common import numbers
from searchsvc.worker.context import current
from searchsvc.worker.sdk import report, restored_files

CHECKPOINT_FILE = "lightning.ckpt"


class SearchsvcCallback(pl.Callback):
    """Report ``trainer.callback_metrics`` at the end of every validation (the sanity check
    excepted), with ``epoch`` (epochs completed) as the step; when the study keeps
    checkpoints, the trainer's checkpoint rides with the report. ``metrics``: report only
    these names (default: every number logged). At setup, ``pl.seed_everything`` gets the
    trial's seed (``workers=True``: dataloader workers are seeded from it too)."""

    def __init__(self, metrics: Sequence[str] | None = None):
        super().__init__()
        self.metrics = None if metrics is None else list(metrics)

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        pl.seed_everything(current().seed % 2**32, workers=True, verbose=False)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        values = numbers(trainer.callback_metrics, self.metrics)
        values["epoch"] = trainer.current_epoch + 1

        def save(folder: Path) -> None:
            trainer.save_checkpoint(folder / CHECKPOINT_FILE)

        report(values, files=save)


def resume_checkpoint() -> str | None:
    """The path of the Lightning checkpoint this trial continues from, for
    ``trainer.fit(..., ckpt_path=...)``; None when it starts afresh."""
    folder = restored_files()
    if folder is None or not (folder / CHECKPOINT_FILE).exists():
        return None
    return str(folder / CHECKPOINT_FILE)
