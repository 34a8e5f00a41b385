"""The backend contract, and the default backend (a Ray Tune function trainable)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from searchsvc.errors import SpecIssue
from searchsvc.runner.context import returned_metrics
from searchsvc.runner.objective import resolve_objective
from searchsvc.spec import StudySpec


class NoBackendOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Backend(ABC):
    """Runs one trial inside a Ray worker: ``run(config)`` trains with ``config`` and reports
    every step through :mod:`searchsvc.sdk` (or ``ray.tune.report``). It must raise for a
    config it cannot use, naming the parameter: the trial then fails and the study goes on."""

    name: ClassVar[str]
    summary: ClassVar[str]
    Options: ClassVar[type[BaseModel]] = NoBackendOptions

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


class RayBackend(Backend):
    name = "ray"
    summary = "a Ray Tune function trainable: def train(config) calling ray.tune.report"

    def run(self, config: dict[str, Any]) -> None:
        returned = self.objective()(config)
        if returned is not None:
            from searchsvc.runner.sdk import report

            report(returned_metrics(returned, self.metric))
