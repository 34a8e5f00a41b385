"""Optional helpers for objectives: the trial's seed and budget, device choice, and one-line
checkpoint save/restore. A plain Ray Tune function trainable needs none of them."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from searchsvc.core.commands import REPORT_PREFIX, REPORT_VARIABLE
from searchsvc.worker.context import TELEMETRY_KEY, TrialContext, current, seed_trial

STATE_FILE = "state.pt"
T = TypeVar("T")


def trial_context() -> TrialContext:
    """The running trial's number, seed, max_steps, metric and mode."""
    return current()


def trial_dir() -> Path:
    """The running trial's own output folder (in the study's results, one per trial): the
    place for files the trial writes. The trial's working directory is the folder the study
    was launched from, so relative paths read the user's data as ``python train.py`` would.
    Under preflight: a temporary folder of its own. Outside a trial (``run_locally``, a
    plain call): one temporary folder for this process."""
    global _scratch
    found = current().trial_dir
    if found is None:
        _scratch = _scratch or tempfile.mkdtemp(prefix="searchsvc-trial-")
        found = _scratch
    path = Path(found)
    path.mkdir(parents=True, exist_ok=True)
    return path


_scratch: str | None = None  # trial_dir() outside a trial


def max_steps(default: int) -> int:
    """The study's ``budget.max_steps``, or ``default`` outside a study."""
    return current().max_steps or default


def seed_everything(seed: int | None = None) -> int:
    """Seed Python, NumPy and (if imported) PyTorch with ``seed`` or the trial's seed."""
    return seed_trial(seed)


def device() -> Any:
    """The torch device for this trial: the GPU Ray assigned (CUDA_VISIBLE_DEVICES), else CPU."""
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def report(metrics: Mapping[str, Any], *, state: Callable[[], Mapping[str, Any]] | None = None,
           files: Callable[[Path], Any] | None = None, samples: int | None = None) -> None:
    """Report one step's metrics; when the study keeps checkpoints, also save ``state()``
    (a dict of tensors/state_dicts) as this step's checkpoint, and ``files(folder)``, which
    writes a framework's own checkpoint files into ``folder`` (read back with
    :func:`restored_files`). ``samples``: the examples this step processed, for the trial's
    telemetry (samples/s). Under Ray the step's telemetry (worker/telemetry.py) rides along
    under a reserved key, apart from the metrics."""
    context = current()
    if context.reporter is not None:
        context.reporter(dict(metrics))
        return
    if os.environ.get(REPORT_VARIABLE) == "output" and context.trial_dir is None:
        # inside a command objective's script: the worker that runs it reads this line back
        print(REPORT_PREFIX + json.dumps(dict(metrics)), flush=True)
        return
    ray_api = _ray_api()
    result = dict(metrics)
    if context.telemetry is not None:
        result[TELEMETRY_KEY] = context.telemetry.step(samples)
    # Rank 0 saves a data-parallel trial's checkpoint (every rank holds the same weights).
    if (state is None and files is None) or not context.keep_checkpoints or (
            context.rank or 0) > 0:
        ray_api.report(result)
        return
    with tempfile.TemporaryDirectory() as tmp:
        if state is not None:
            import torch

            torch.save(dict(state()), Path(tmp) / STATE_FILE)
        if files is not None:
            files(Path(tmp))
        ray_api.report(result, checkpoint=ray_api.Checkpoint.from_directory(tmp))


def _ray_api() -> Any:
    """Where a trial reports: ``ray.train`` on a data-parallel trial's workers, else
    ``ray.tune`` (both have ``report``, ``Checkpoint`` and ``get_checkpoint``)."""
    if current().rank is not None:
        import ray.train

        return ray.train
    from ray import tune

    return tune


def watch(model: Any, probe: Any = None, every: int | None = None,
          layers: Sequence[Any] | Mapping[str, Any] | None = None) -> Any:
    """Measure ``model``'s representation dimensionality through the trial: each watched
    layer's participation ratio and stable rank (every ``nn.Linear`` and ``nn.Conv*`` layer by
    default, or the modules or ``named_modules()`` names in ``layers``, attention outputs
    included; a mapping gives them names of your own, e.g. ``{"head": model.fc}``, to compare
    the same role across architectures), on the fixed ``probe`` batch (a tensor, a tuple of
    inputs, or a mapping of keyword inputs; no gradients, the model's mode restored) or else on
    the training batch. ``every``:
    training forward passes between measurements; None takes the study file's
    ``dimensionality.every``, adaptive by default (at most 5% of the training time). The
    measurements ride with the next report and land in the report's ``dimensionality``
    section; see :mod:`searchsvc.worker.dimensionality` for the definitions. Raises
    ObjectiveError for a model with no layer to watch, an unknown layer, a probe the model
    rejects (naming the layer and the shapes) or a bad ``every``."""
    from searchsvc.worker import dimensionality

    return dimensionality.watch(model, probe=probe, every=every, layers=layers)


def data_loader(iterable: Iterable[T], *, workers: int | None = None) -> Iterable[T]:
    """Wrap the iterable a training loop takes its batches from (a torch ``DataLoader``, a
    generator, a list, a Ray Train prepared loader): it yields the same items, and the trial's
    telemetry records the time the loop waited in ``next()``, reported as
    ``data_wait_fraction`` of each step's time. Preflight times these same batches against the
    step's compute (its ``input_pipeline`` check). ``workers``: the loader's worker processes
    (default: the iterable's ``num_workers``, else 0; give it when a generator hides a
    DataLoader), so that GPU packing leaves each trial its loader's CPUs."""
    from searchsvc.worker.telemetry import TimedLoader

    return TimedLoader(iterable, workers)


def restore() -> dict[str, Any] | None:
    """The state saved by :func:`report` in the checkpoint this trial resumes from, or None."""
    checkpoint = _resumed_from()
    if checkpoint is None:
        return None
    import torch

    with checkpoint.as_directory() as folder:
        path = Path(folder) / STATE_FILE
        return torch.load(path, weights_only=False) if path.exists() else None


def restored_files() -> Path | None:
    """A folder holding the files :func:`report`'s ``files`` wrote into the checkpoint this
    trial resumes from (a resumed study's interrupted trial, a retry, or the trial PBT
    exploited), or None when it starts afresh. The folder is the trial's own copy
    (``trial_dir()/restored``), so it outlives the call."""
    checkpoint = _resumed_from()
    if checkpoint is None:
        return None
    target = trial_dir() / "restored"
    shutil.rmtree(target, ignore_errors=True)
    with checkpoint.as_directory() as folder:
        shutil.copytree(folder, target)
    return target


def _resumed_from() -> Any:
    """The Ray checkpoint this trial resumes from (on every rank of a data-parallel trial), or
    None: none kept, or no Ray (``run_locally``)."""
    if current().reporter is not None:
        return None
    return _ray_api().get_checkpoint()


def run_locally(objective: Callable[[dict[str, Any]], Any], config: Mapping[str, Any], *,
                metric: str = "value", max_steps: int | None = None, seed: int = 0,
                number: int = 0) -> list[dict[str, Any]]:
    """Run ``objective(config)`` in this process without Ray, as one trial would run, and return
    what it reported (a returned value counts as its last report). For debugging an objective
    and for benchmarks that measure a search algorithm alone; no checkpoints are kept. What
    :func:`watch` measured rides with each report under ``DIMENSIONALITY_KEY``, as it does to
    the driver."""
    from searchsvc.worker import dimensionality
    from searchsvc.worker.context import DIMENSIONALITY_KEY, returned_metrics, set_current

    reports: list[dict[str, Any]] = []

    def keep(metrics: dict[str, Any]) -> None:
        measured = dimensionality.take()
        reports.append({**metrics, DIMENSIONALITY_KEY: measured} if measured else metrics)

    set_current(TrialContext(number=number, seed=seed, max_steps=max_steps, metric=metric,
                             reporter=keep))
    try:
        seed_everything()
        returned = objective(dict(config))
        if returned is not None:
            reports.append(returned_metrics(returned, metric))
    finally:
        set_current(None)
        dimensionality.close_all()
    return reports


def preflight_checks(*, overfit_step: Callable[[], float] | None = None,
                     num_classes: int | None = None) -> None:
    """Offer preflight (``searchsvc preflight``, and ``run`` before a study) two checks; a cheap
    no-op in a trial. ``overfit_step``: one optimisation step on a fixed small batch, returning
    its loss (preflight calls it 30 times and wants the last loss below half the first; give it
    its own copy of the model so the run itself is untouched). ``num_classes``: a classifier's
    class count (the first of those losses should be near ln(num_classes))."""
    from searchsvc.worker import preflight

    preflight.run_hook(overfit_step, num_classes)
