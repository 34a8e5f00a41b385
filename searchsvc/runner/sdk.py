"""Optional helpers for objectives: the trial's seed and budget, device choice, and one-line
checkpoint save/restore. A plain Ray Tune function trainable needs none of them."""

from __future__ import annotations

import os
import random
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from searchsvc.runner.context import TrialContext, current

STATE_FILE = "state.pt"


def trial_context() -> TrialContext:
    """The running trial's number, seed, max_steps, metric and mode."""
    return current()


def max_steps(default: int) -> int:
    """The study's ``budget.max_steps``, or ``default`` outside a study."""
    return current().max_steps or default


def seed_everything(seed: int | None = None) -> int:
    """Seed Python, NumPy and (if imported) PyTorch with ``seed`` or the trial's seed."""
    seed = current().seed if seed is None else seed
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    if "numpy" in sys.modules:
        import numpy as np

        np.random.seed(seed % (2**32))
    if "torch" in sys.modules:
        import torch

        torch.manual_seed(seed)
    return seed


def device() -> Any:
    """The torch device for this trial: the GPU Ray assigned (CUDA_VISIBLE_DEVICES), else CPU."""
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def report(metrics: Mapping[str, Any], *, state: Callable[[], Mapping[str, Any]] | None = None
           ) -> None:
    """Report one step's metrics; when the study keeps checkpoints, also save ``state()``
    (a dict of tensors/state_dicts) as this step's checkpoint."""
    from ray import tune

    if state is None or not current().keep_checkpoints:
        tune.report(dict(metrics))
        return
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        torch.save(dict(state()), Path(tmp) / STATE_FILE)
        tune.report(dict(metrics), checkpoint=tune.Checkpoint.from_directory(tmp))


def restore() -> dict[str, Any] | None:
    """The state saved by :func:`report` in the checkpoint this trial resumes from, or None."""
    from ray import tune

    checkpoint = tune.get_checkpoint()
    if checkpoint is None:
        return None
    import torch

    with checkpoint.as_directory() as folder:
        path = Path(folder) / STATE_FILE
        return torch.load(path, weights_only=False) if path.exists() else None
