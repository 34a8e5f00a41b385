"""The function Ray runs for every trial: sets the trial's context and seeds, and hands the
config to the study's backend on the worker (which imports the objective and reports)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from searchsvc.startup import collect_as_usual
from searchsvc.worker import dimensionality
from searchsvc.worker.context import (
    DIMENSIONALITY_KEY,
    TELEMETRY_KEY,
    TRIAL_KEY,
    TrialContext,
    current,
    reporting_trial,
    seed_trial,
    set_current,
    split_config,
)
from searchsvc.worker.objective import give_objective
from searchsvc.worker.shadowing import named_shadowing
from searchsvc.worker.telemetry import Telemetry
from searchsvc.worker.workdir import explain_missing_file, working_directory


class TrialBackend(Protocol):
    """What the worker needs of a backend (``searchsvc.backends.Backend`` is one): the worker
    knows backends only through this, so it never imports the backends package."""

    def objective(self) -> Any:
        """Import the study's objective (its module, with what that imports)."""

    def run(self, config: dict[str, Any]) -> None: ...


BackendFactory = Callable[[str, Sequence[str], str, int | None, Mapping[str, Any]],
                          TrialBackend]


@dataclass(frozen=True)
class TrialSettings:
    """What every trial of a study shares; shipped once to the workers."""

    study: str
    objective: str
    search_paths: tuple[str, ...]
    metric: str
    mode: str
    max_steps: int | None
    keep_checkpoints: bool
    # The backend's class itself (pickled by reference): the worker never looks names up in
    # the registry, so it imports only the backend that the study uses.
    backend: BackendFactory
    backend_options: tuple[tuple[str, Any], ...] = ()
    # The objective itself when it was given as a function (pickled by value when it lives
    # where a worker cannot import it, such as a notebook); None: imported by name.
    function: Callable[..., Any] | None = None
    # The study file's ``dimensionality`` section, which sdk.watch follows.
    dimensionality: tuple[tuple[str, Any], ...] = ()
    # The folder the study was launched from: every trial's working directory where the node
    # has it (worker/workdir.py); None: the folder Ray started the process in (uploaded code).
    workdir: str | None = None

    def give(self) -> None:
        """Make this process resolve the study's objective to the given function, if any."""
        if self.function is not None:
            give_objective(self.objective, self.function)


def run_trial(config: dict[str, Any], settings: TrialSettings, *, rank: int | None = None,
              world_size: int = 1) -> None:
    """Run one trial's objective in this process, in the study's working directory
    (:mod:`.workdir`): its context (number, seed, budget, output folder and, on a
    data-parallel trial's worker, its rank), seeds, telemetry, then the backend."""
    user_config, meta = split_config(config)
    number = int(meta.get("number", 0))
    settings.give()
    trial_dir = meta.get("trial_dir") or _tune_trial_dir()
    telemetry = Telemetry(where=None if rank is None else _where(rank))
    with named_shadowing(settings.search_paths):
        report_with_telemetry()
    set_current(TrialContext(
        study=settings.study, number=number, seed=int(meta.get("seed", 0)),
        max_steps=settings.max_steps, metric=settings.metric, mode=settings.mode,
        keep_checkpoints=settings.keep_checkpoints, telemetry=telemetry, rank=rank,
        world_size=world_size, dimensionality=dict(settings.dimensionality),
        trial_dir=trial_dir,
    ))
    try:
        with working_directory(settings.workdir):
            backend = settings.backend(
                settings.objective, settings.search_paths, settings.metric,
                settings.max_steps, dict(settings.backend_options))
            try:
                # The user's module first: what it imports (torch, TensorFlow) on a fresh
                # worker is then seeded too, as on a reused one.
                backend.objective()
                collect_as_usual()  # started, the objective is collected as anywhere
                seed_trial()
                backend.run(user_config)
            except BaseException as exc:
                explain_missing_file(exc, settings.workdir)
                raise
    finally:
        set_current(None)
        dimensionality.close_trial(number)
        telemetry.close()


def _tune_trial_dir() -> str | None:
    """The running Tune trial's own folder, where Ray Tune keeps its files."""
    from ray import tune

    try:
        return str(tune.get_context().get_trial_dir())
    except Exception:  # no Tune session (e.g. the objective run by hand)
        return None


def _where(rank: int) -> dict[str, Any]:
    """Where a data-parallel trial's worker runs: its rank, Ray node and host."""
    import socket

    import ray

    return {"rank": rank, "node": ray.get_runtime_context().get_node_id(),
            "host": socket.gethostname()}


def report_with_telemetry() -> None:
    """Make ``ray.tune.report`` and ``ray.train.report``, as objectives written from Ray's
    documentation call them, carry the running trial's telemetry too (``sdk.report`` adds its
    own first). Installed once per worker process and reading the trial's context at each
    call, so an objective that bound ``report`` at import, on a worker Tune reuses, still
    reports the current trial's."""
    import ray.train
    from ray import tune

    for module in (tune, ray.train):
        setattr(module, "report", _with_telemetry(module.report))  # noqa: B010


def _with_telemetry(original: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(original, "searchsvc_telemetry", False):
        return original

    def report(metrics: Mapping[str, Any], *args: Any, **kwargs: Any) -> Any:
        telemetry = current().telemetry
        if telemetry is not None and TELEMETRY_KEY not in metrics:
            metrics = {**metrics, TELEMETRY_KEY: telemetry.step()}
        measured = dimensionality.take()
        if measured:
            metrics = {**metrics, DIMENSIONALITY_KEY: measured}
        metrics = {**metrics, TRIAL_KEY: reporting_trial()}
        started = time.perf_counter()
        try:
            return original(metrics, *args, **kwargs)
        finally:
            if telemetry is not None:  # sdk.report's calls come through here too
                telemetry.reported(time.perf_counter() - started)

    report.searchsvc_telemetry = True  # type: ignore[attr-defined]
    report.__doc__, report.__wrapped__ = original.__doc__, original  # type: ignore[attr-defined]
    return report
