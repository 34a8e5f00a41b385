"""Hugging Face ``transformers.Trainer``: a callback that reports each evaluation's metrics
and hands the checkpoint the Trainer has just saved to searchsvc. ::

    from searchsvc.integrations.huggingface import SearchsvcCallback, resume_checkpoint

    args = TrainingArguments(output_dir=str(sdk.trial_dir()), eval_strategy="epoch",
                             save_strategy="epoch", num_train_epochs=sdk.max_steps(3),
                             seed=sdk.trial_context().seed, ...)
    trainer = Trainer(model=model, args=args, ..., callbacks=[SearchsvcCallback()])
    trainer.train(resume_from_checkpoint=resume_checkpoint())

A resumed trial continues from the Trainer's checkpoint whole (weights, optimizer, scheduler,
RNG, trainer state). When that checkpoint comes from a trial with another ``learning_rate``
(PBT exploited it and explored a new one), the restored schedule is rescaled to this trial's
learning rate, so PBT's exploration takes effect.

Evaluate and save on the same schedule (``eval_strategy`` = ``save_strategy``): the report
of an evaluation goes out when the Trainer saves after it, with that checkpoint folder
(weights, optimizer, scheduler, RNG and trainer state) when the study keeps checkpoints.
Without saving (``save_strategy="no"``) each evaluation is reported at once. Each report
carries ``epoch`` (epochs completed, a float mid-epoch) when evaluating by epoch, and the
Trainer's ``global_step``. The device is the one Ray assigned (CUDA_VISIBLE_DEVICES), which
the Trainer picks up itself.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from searchsvc.integrations._common import numbers
from searchsvc.worker.sdk import report, restored_files

CHECKPOINT_FOLDER = "hf-checkpoint"
LEARNING_RATE_FILE = "learning_rate.json"  # the saving trial's TrainingArguments.learning_rate


class SearchsvcCallback(TrainerCallback):
    """Report every evaluation's metrics (``eval_loss``, ``eval_*``); ``metrics``: report only
    these names (default: all)."""

    def __init__(self, metrics: Sequence[str] | None = None):
        self.metrics = None if metrics is None else list(metrics)
        self._pending: dict[str, float] | None = None

    def on_evaluate(self, args: Any, state: Any, control: Any,
                    metrics: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        values = numbers(metrics or {}, self.metrics)
        by_epoch = str(getattr(args, "eval_strategy", "")).endswith("epoch")
        if by_epoch and state.epoch is not None:
            values["epoch"] = float(state.epoch)
        values["global_step"] = float(state.global_step)
        if str(getattr(args, "save_strategy", "")).endswith("no"):
            report(values)
        else:
            self._pending = values  # reported with the checkpoint saved next

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._pending is None or not state.is_world_process_zero:
            return
        values, self._pending = self._pending, None
        saved = Path(args.output_dir) / f"checkpoint-{state.global_step}"

        def copy(folder: Path) -> None:
            if saved.is_dir():
                shutil.copytree(saved, folder / CHECKPOINT_FOLDER)
            (folder / LEARNING_RATE_FILE).write_text(json.dumps(float(args.learning_rate)))

        report(values, files=copy)

    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # The first hook after the Trainer loaded a checkpoint's optimizer and scheduler.
        saved = _RESTORED.pop("learning_rate", None)
        if not saved or float(args.learning_rate) == saved:
            return
        _rescale(kwargs.get("optimizer"), kwargs.get("lr_scheduler"),
                 float(args.learning_rate) / saved)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._pending is not None:  # an evaluation no save followed
            values, self._pending = self._pending, None
            report(values)


def resume_checkpoint() -> str | None:
    """The Trainer checkpoint folder this trial continues from, for
    ``trainer.train(resume_from_checkpoint=...)``; None when it starts afresh."""
    folder = restored_files()
    if folder is None or not (folder / CHECKPOINT_FOLDER).is_dir():
        return None
    if (folder / LEARNING_RATE_FILE).exists():
        _RESTORED["learning_rate"] = float(json.loads((folder / LEARNING_RATE_FILE).read_text()))
    return str(folder / CHECKPOINT_FOLDER)


# What resume_checkpoint() found, for the callback's first hook after the Trainer restored.
_RESTORED: dict[str, float] = {}


def _rescale(optimizer: Any, scheduler: Any, factor: float) -> None:
    """Multiply the learning rate of a restored optimizer, and the base rates its scheduler
    computes the next ones from, by ``factor``."""
    if optimizer is not None:
        for group in optimizer.param_groups:
            group["lr"] *= factor
            if "initial_lr" in group:
                group["initial_lr"] *= factor
    if scheduler is not None and hasattr(scheduler, "base_lrs"):
        scheduler.base_lrs = [rate * factor for rate in scheduler.base_lrs]
