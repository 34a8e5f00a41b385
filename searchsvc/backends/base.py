"""The backend contract, and the default backend (a Ray Tune function trainable)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from searchsvc.errors import SpecIssue
from searchsvc.spec import StudySpec
from searchsvc.worker.context import current, returned_metrics
from searchsvc.worker.objective import resolve_objective


class NoBackendOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class SearchedTrial:
    """One finished trial of a backend that runs its own search, as the store records it."""

    number: int
    config: dict[str, Any]
    epochs: list[dict[str, float]] = field(default_factory=list)
    completed: bool = True
    error: str | None = None


class Backend(ABC):
    """Runs one trial inside a Ray worker: ``run(config)`` trains with ``config`` and reports
    every step through :mod:`searchsvc.sdk` (or ``ray.tune.report``). It must raise for a
    config it cannot use, naming the parameter: the trial then fails and the study goes on.

    Capabilities the driver reads instead of naming backends: ``runs_own_search`` (the backend
    searches with its own tuner in one job, :meth:`own_search`, instead of running the study's
    searcher trial by trial), ``data_parallel`` (a trial may run on several Ray Train
    workers, ``resources.workers``), ``own_space`` (its search needs no ``parameters``) and
    ``no_dimensionality_because`` (why the study file's ``dimensionality`` does not apply) and
    ``runs_commands`` (it runs ``objective: {command: ...}``).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    Options: ClassVar[type[BaseModel]] = NoBackendOptions
    runs_own_search: ClassVar[bool] = False
    data_parallel: ClassVar[bool] = False
    # Whether its own search defines the space, so a study may declare no parameters.
    own_space: ClassVar[bool] = False
    # Why ``sdk.watch`` cannot measure its models' dimensionality ("": it can).
    no_dimensionality_because: ClassVar[str] = ""
    # Whether it runs a study file's ``objective: {command: ...}`` (a script, as it is).
    runs_commands: ClassVar[bool] = False

    def __init__(self, objective: str, search_paths: Sequence[str], metric: str,
                 max_steps: int | None, options: Mapping[str, Any]):
        self.objective_ref, self.search_paths = objective, list(search_paths)
        self.metric, self.max_steps = metric, max_steps
        self.options = self.Options.model_validate(dict(options))

    @classmethod
    def check(cls, spec: StudySpec) -> list[SpecIssue]:
        """Rules beyond the options' own schema (none by default)."""
        return []

    def objective(self) -> Any:
        return self.resolve(self.objective_ref)

    def resolve(self, ref: str) -> Any:
        """The callable ``ref`` ("module:callable") names, on the study's import path."""
        return resolve_objective(ref, self.search_paths)

    @abstractmethod
    def run(self, config: dict[str, Any]) -> None: ...

    @classmethod
    def own_search(cls, objective: Callable[[], Any], options: Mapping[str, Any], *,
                   metric: str, max_trials: int, epochs: int, seed: int, directory: Path,
                   resume: bool, sink: Callable[[SearchedTrial], None]) -> Path:
        """Only for ``runs_own_search`` backends, inside one Ray task: run the whole search
        (continuing ``directory``'s when ``resume``), hand every trial to ``sink`` as it ends,
        save the best model under ``directory`` and return its path."""
        raise NotImplementedError(f"backend {cls.name!r} does not run its own search")


class RayBackend(Backend):
    name = "ray"
    summary = "a Ray Tune function trainable: def train(config) calling ray.tune.report"
    data_parallel = True  # on Ray Train workers, a Ray Train training function

    def run(self, config: dict[str, Any]) -> None:
        objective = self.objective()
        telemetry = current().telemetry
        if telemetry is not None:  # the first step's time starts here, after the import
            telemetry.restart()
        returned = objective(config)
        if returned is not None:
            from searchsvc.worker.sdk import report

            report(returned_metrics(returned, self.metric))
