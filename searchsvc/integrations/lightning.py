"""PyTorch Lightning: a callback that reports each validation's logged metrics, saves the
trainer's full state (weights, optimizer, loops) through searchsvc's checkpoint, and seeds
Lightning with the trial's seed. ::

    from searchsvc.integrations.lightning import SearchsvcCallback, resume_checkpoint

    trainer = pl.Trainer(max_epochs=sdk.max_steps(10), callbacks=[SearchsvcCallback()])
    trainer.fit(model, datamodule=data, ckpt_path=resume_checkpoint())

``resume_checkpoint()`` is the Lightning checkpoint this trial continues from (a resumed
study's interrupted trial, a retry, or the trial PBT exploited), or None.

Lightning restores an optimizer whole, its learning rate included. When the checkpoint comes
from a trial whose ``configure_optimizers`` set other hyperparameters (PBT exploited it and
explored a new learning rate), the callback gives the restored optimizer this trial's own
hyperparameters and keeps its state (momentum, moments); restoring a trial's own checkpoint
keeps everything, a scheduler's decayed learning rate included.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytorch_lightning as pl

from searchsvc.integrations._common import numbers
from searchsvc.worker.context import current
from searchsvc.worker.sdk import report, restored_files

CHECKPOINT_FILE = "lightning.ckpt"
# In a checkpoint: the optimizers' hyperparameters as the saving trial configured them.
CONFIGURED_KEY = "searchsvc_configured_optimizers"


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
        self._configured: list[list[dict[str, Any]]] | None = None
        self._restored: list[list[dict[str, Any]]] | None = None

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # Optimizers are configured by now, and not yet restored from a checkpoint.
        self._configured = _hyperparameters(trainer.optimizers)

    def on_save_checkpoint(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        checkpoint[CONFIGURED_KEY] = self._configured

    def on_load_checkpoint(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        self._restored = checkpoint.get(CONFIGURED_KEY)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._keep_configured_hyperparameters(trainer)
        self._tell_loader_workers(trainer)

    def _keep_configured_hyperparameters(self, trainer: pl.Trainer) -> None:
        """After a restore, this trial's hyperparameters where the checkpoint's trial
        configured others (see the module's docstring)."""
        configured = getattr(self, "_configured", None)
        if configured is None or getattr(self, "_restored", None) in (None, configured):
            return
        for optimizer, groups in zip(trainer.optimizers, configured, strict=False):
            for group, values in zip(optimizer.param_groups, groups, strict=False):
                group.update(values)

    # Telemetry: the time between one training batch's end and the next one's start is the
    # time Lightning waited for the batch (the loop's own overhead included), as
    # sdk.data_loader would time it; each epoch's first wait counts the loader's start.
    def _tell_loader_workers(self, trainer: pl.Trainer) -> None:
        telemetry = current().telemetry
        loader = getattr(trainer, "train_dataloader", None)
        if telemetry is not None and loader is not None:
            telemetry.loader_started(int(getattr(loader, "num_workers", 0) or 0))

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._asked = time.perf_counter()

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                             batch: Any, batch_idx: int) -> None:
        telemetry, now = current().telemetry, time.perf_counter()
        if telemetry is not None and getattr(self, "_asked", None) is not None:
            telemetry.waited(now - self._asked)
            telemetry.batch_arrived(now)

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           outputs: Any, batch: Any, batch_idx: int) -> None:
        self._asked = time.perf_counter()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        values = numbers(trainer.callback_metrics, self.metrics)
        values["epoch"] = trainer.current_epoch + 1

        def save(folder: Path) -> None:
            trainer.save_checkpoint(folder / CHECKPOINT_FILE)

        report(values, files=save)

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                     exception: BaseException) -> None:
        # A stop from early stopping arrives as SystemExit at a report. Lightning then runs its
        # own teardown (dataloader workers, strategy) but, as after any error, not the
        # ``teardown`` hooks: a stopped trial is no error, so they run as after a finished fit.
        if not isinstance(exception, SystemExit):
            return
        stage = str(getattr(trainer.state.fn, "value", trainer.state.fn) or "fit")
        datamodule = getattr(trainer, "datamodule", None)
        if datamodule is not None:
            datamodule.teardown(stage)
        for callback in trainer.callbacks:  # type: ignore[attr-defined]
            if callback is not self:
                callback.teardown(trainer, pl_module, stage)
        pl_module.teardown(stage)
        _end_loader_workers()


def _end_loader_workers() -> None:
    """End the worker processes of this process's multi-process DataLoader iterators. Stopped
    by an exception, Lightning lets go of its iterators inside reference cycles, and their
    workers (``persistent_workers`` above all) would live on in the reused Ray worker until a
    garbage collection happened to run."""
    from torch.utils.data.dataloader import _MultiProcessingDataLoaderIter

    for found in gc.get_objects():
        if isinstance(found, _MultiProcessingDataLoaderIter):
            found._shutdown_workers()


def resume_checkpoint() -> str | None:
    """The path of the Lightning checkpoint this trial continues from, for
    ``trainer.fit(..., ckpt_path=...)``; None when it starts afresh."""
    folder = restored_files()
    if folder is None or not (folder / CHECKPOINT_FILE).exists():
        return None
    return str(folder / CHECKPOINT_FILE)


def _hyperparameters(optimizers: Sequence[Any]) -> list[list[dict[str, Any]]]:
    """Each optimizer's param groups without their parameters: the numbers and flags
    ``configure_optimizers`` chose (lr, momentum, betas, weight_decay, ...)."""
    return [[{k: v for k, v in group.items()
              if k != "params" and isinstance(v, int | float | bool | str | tuple | None)}
             for group in optimizer.param_groups] for optimizer in optimizers]
