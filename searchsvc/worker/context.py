"""What a running trial knows about itself (number, seed, budget), set by searchsvc's wrapper
around the objective. Plain Python: usable and testable without Ray."""

from __future__ import annotations

import numbers
import os
import random
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# In the META_KEY entry: {"path", "step"} of the checkpoint a resumed study's interrupted trial
# starts from (its steps up to ``step`` are kept).
RESTORE_KEY = "restore"
META_KEY = "__searchsvc__"  # reserved config key the runner uses to tell the wrapper its trial
# Reserved result key: the step's telemetry (worker/telemetry.py), never one of the metrics.
TELEMETRY_KEY = "searchsvc_telemetry"
# Reserved result key: the dimensionality sdk.watch measured since the last report.
DIMENSIONALITY_KEY = "searchsvc_dimensionality"
# Reserved result key: the number of the trial whose objective sent the report. The driver keeps
# a result only for that trial: a worker Ray Tune reuses runs trials one after another, and a
# report of the one before must never land in the next one's record.
TRIAL_KEY = "searchsvc_trial"


@dataclass(frozen=True)
class TrialContext:
    study: str = "adhoc"
    number: int = 0
    seed: int = 0
    max_steps: int | None = None
    metric: str | None = None
    mode: str | None = None
    keep_checkpoints: bool = False
    # Set by run_locally: receives each report instead of Ray Tune.
    reporter: Callable[[dict[str, Any]], None] | None = field(default=None, compare=False)
    # The trial's telemetry collector (worker/telemetry.py), when it runs under Ray.
    telemetry: Any = field(default=None, compare=False)
    # On a Ray Train worker of a data-parallel trial (``resources.workers``): its world rank
    # (None: a single-process trial) and the number of workers. Reports and checkpoints then
    # go through ``ray.train``; the trial's metrics and checkpoint are rank 0's.
    rank: int | None = None
    world_size: int = 1
    # The study file's ``dimensionality`` section ({"every": "auto" | N, "until": ...}) that
    # sdk.watch follows; None outside a study.
    dimensionality: Mapping[str, Any] | None = field(default=None, compare=False)
    # The trial's own output folder (sdk.trial_dir); None outside a trial.
    trial_dir: str | None = None


_current: TrialContext | None = None
# The trial each thread runs: the context is one per process (threads the objective starts read
# it too), but a reused worker's previous trial may still be ending in its own thread.
_thread = threading.local()


def set_current(context: TrialContext | None) -> None:
    """Make ``context`` the running trial's, in this process and as this thread's trial."""
    global _current
    _current = context
    _thread.number = None if context is None else context.number


def reporting_trial() -> int:
    """The number of the trial whose objective runs in this thread (the process's running
    trial in a thread the objective started)."""
    number = getattr(_thread, "number", None)
    return current().number if number is None else int(number)


def current() -> TrialContext:
    """The running trial's context; a default one when called outside searchsvc."""
    return _current or TrialContext()


def split_config(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the user's config, searchsvc's trial metadata)."""
    user = {k: v for k, v in config.items() if k != META_KEY}
    return user, dict(config.get(META_KEY) or {})


def returned_metrics(returned: Any, metric: str) -> dict[str, Any]:
    """An objective may return its final result instead of reporting: a number (the study's
    metric) or a mapping of metrics."""
    if isinstance(returned, Mapping):
        return dict(returned)
    if isinstance(returned, numbers.Real) and not isinstance(returned, bool):
        return {metric: float(returned)}
    raise TypeError(
        f"the objective returned {type(returned).__name__}; return None (after reporting with "
        f"ray.tune.report), a number (the metric {metric!r}) or a dict of metrics"
    )


def seed_trial(seed: int | None = None) -> int:
    """Seed Python, NumPy and (if imported) PyTorch and TensorFlow with ``seed`` or the
    trial's seed, as each trial does once its objective's module is imported and before the
    objective runs (preflight too); returns the seed."""
    seed = current().seed if seed is None else seed
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    if "numpy" in sys.modules:
        import numpy as np

        np.random.seed(seed % (2**32))
    if "torch" in sys.modules:
        import torch

        torch.manual_seed(seed)
    if "tensorflow" in sys.modules:
        import tensorflow as tf  # type: ignore[import-untyped]

        tf.random.set_seed(seed % (2**31))
    return seed
