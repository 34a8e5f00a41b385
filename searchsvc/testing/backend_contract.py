"""The contract every registered backend passes, as reusable pytest suites.

:class:`BackendContract` (every backend) needs a ``backend`` fixture naming one, e.g. over
``backend_names()``; :class:`FunctionBackendContract` (backends whose objective is a function
of the config, as ``ray``'s) a ``backend`` fixture over :func:`function_backends`. Nothing here
trains a model or starts Ray: a trial runs in this process, its reports caught through
:func:`searchsvc.worker.context.set_current` as :func:`searchsvc.sdk.run_locally` does.

- ``backend_options``: the Options model forbids unknown keys, and the study check says which
  key is unknown, where, what is allowed (and the near miss);
- ``check()`` returns located :class:`SpecIssue`\\ s, never raises, for specs a backend may
  refuse;
- a ``runs_own_search`` backend implements ``own_search`` and refuses ``run``; any other one
  refuses ``own_search`` (NotImplementedError);
- a function backend runs the objective with the config and reports what it returned: a number
  as the study's metric, a mapping as it is.
"""

from __future__ import annotations

import itertools
import json
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from searchsvc.backends import Backend, backend_class, backend_names, check_backend
from searchsvc.backends.base import RayBackend
from searchsvc.errors import ObjectiveError, SearchsvcError, SpecIssue
from searchsvc.spec import StudySpec, parse_spec
from searchsvc.worker.context import TrialContext, set_current

SPACE = """\
study: contract
objective: {objective}
backend: {backend}
backend_options: {options}
metric: loss
mode: min
searcher: {searcher}
budget: {budget}
parameters:
  units: {{role: nuisance, type: int, low: 4, high: 8}}
"""
_modules = itertools.count()


def required_options(model: type[BaseModel]) -> dict[str, Any]:
    """A value for every required field of a backend's Options: the first of a Literal's
    values, a "module:callable" for a string, else the type's simplest value."""
    options: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if not info.is_required():
            continue
        kind = info.annotation
        if typing.get_origin(kind) is typing.Literal:
            options[name] = typing.get_args(kind)[0]
        elif kind is str:
            options[name] = "contract_module:function"
        else:
            simplest: dict[Any, Any] = {int: 1, float: 0.5, bool: False}
            options[name] = simplest.get(kind)
    return options


def backend_spec(backend: str, options: Mapping[str, Any] | None = None, *,
                 searcher: str = "quasi_random",
                 budget: str = "{trials: 2, max_steps: 2}") -> StudySpec:
    """A study on ``backend`` with ``options`` (default: its required ones)."""
    if options is None:
        options = required_options(backend_class(backend).Options)
    return parse_spec(SPACE.format(objective="contract_module:function", backend=backend,
                                   options=json.dumps(dict(options)), searcher=searcher,
                                   budget=budget), file="contract.yaml")


class BackendContract:
    """Tests every backend passes; a subclass supplies ``backend`` (a registered name)."""

    @pytest.fixture
    def backend(self) -> str:
        raise NotImplementedError("a subclass of BackendContract provides the backend names")

    def test_it_is_registered_under_its_name_with_a_summary(self, backend: str) -> None:
        cls = backend_class(backend)
        assert issubclass(cls, Backend) and cls.name == backend
        assert cls.summary.strip()

    def test_its_required_options_pass_the_study_check(self, backend: str) -> None:
        assert check_backend(backend_spec(backend)) == []

    def test_unknown_options_are_refused_naming_the_key_and_what_is_allowed(
            self, backend: str) -> None:
        cls = backend_class(backend)
        assert cls.Options.model_config.get("extra") == "forbid"
        options = {**required_options(cls.Options), "no_such_option": 1}
        [issue] = check_backend(backend_spec(backend, options))
        assert issue.path == ("backend_options", "no_such_option")
        assert issue.message.startswith("unknown field")
        assert issue.line == 4 and issue.file == "contract.yaml"
        for name in cls.Options.model_fields:
            assert name in issue.message
        with pytest.raises(ValidationError, match="no_such_option"):
            cls("contract_module:function", [], "loss", 2, options)

    def test_a_misspelt_option_gets_a_did_you_mean(self, backend: str) -> None:
        cls = backend_class(backend)
        fields = [name for name in cls.Options.model_fields if len(name) > 3]
        if not fields:
            return  # nothing to misspell
        options = required_options(cls.Options)
        value = options.pop(fields[0], "value")
        options[fields[0][:-1]] = value
        issues = check_backend(backend_spec(backend, options))
        assert any(f"did you mean '{fields[0]}'" in i.message for i in issues), issues

    @pytest.mark.parametrize("change", ["no max_steps", "no trials", "another searcher",
                                        "options of the wrong type"])
    def test_check_returns_located_spec_issues_and_never_raises(self, backend: str,
                                                                change: str) -> None:
        cls = backend_class(backend)
        options: dict[str, Any] = required_options(cls.Options)
        budget, searcher = "{trials: 2, max_steps: 2}", "quasi_random"
        if change == "no max_steps":
            budget = "{trials: 2}"
        elif change == "no trials":
            budget = "{max_steps: 2}"
        elif change == "another searcher":
            searcher = "random"
        else:
            options = {name: ["a", "list"] for name in cls.Options.model_fields}
        spec = backend_spec(backend, options, searcher=searcher, budget=budget)
        issues = check_backend(spec) + cls.check(spec)
        for issue in issues:
            assert isinstance(issue, SpecIssue)
            assert issue.line is not None and issue.render().startswith("contract.yaml:")
        if change == "options of the wrong type" and cls.Options.model_fields:
            assert {i.path[:2] for i in issues} == {("backend_options", name)
                                                    for name in cls.Options.model_fields}

    def test_own_search_is_implemented_exactly_by_backends_that_run_their_own(
            self, backend: str, tmp_path: Path) -> None:
        cls = backend_class(backend)
        if cls.runs_own_search:
            assert cls.own_search.__func__ is not Backend.own_search.__func__  # type: ignore[attr-defined]
            instance = cls("contract_module:function", [], "loss", 2,
                           required_options(cls.Options))
            with pytest.raises(SearchsvcError):
                instance.run({"units": 4})  # one search job, never trial by trial
            return
        with pytest.raises(NotImplementedError, match=f"backend '{backend}' does not run"):
            cls.own_search(lambda: None, required_options(cls.Options), metric="loss",
                           max_trials=1, epochs=1, seed=0, directory=tmp_path, resume=False,
                           sink=lambda trial: None)


def function_backends() -> list[str]:
    """The registered backends whose objective is a function of the config (``ray``'s)."""
    return [name for name in backend_names() if issubclass(backend_class(name), RayBackend)]


@contextmanager
def reports() -> Iterator[list[dict[str, Any]]]:
    """Catch what a trial run in this process reports (searchsvc.sdk.report)."""
    caught: list[dict[str, Any]] = []
    set_current(TrialContext(study="contract", metric="loss", mode="min", reporter=caught.append))
    try:
        yield caught
    finally:
        set_current(None)


def objective_module(folder: Path, body: str) -> str:
    """Write ``def objective(config):`` with ``body`` as a fresh module in ``folder``; its
    "module:callable" reference."""
    name = f"contract_objective_{next(_modules)}"
    lines = "\n".join(f"    {line}" for line in body.splitlines())
    (folder / f"{name}.py").write_text(
        f"from searchsvc import sdk\n\n\ndef objective(config):\n{lines}\n")
    return f"{name}:objective"


class FunctionBackendContract:
    """Tests of backends whose objective is a function of the config; a subclass supplies
    ``backend`` (one of :func:`function_backends`)."""

    @pytest.fixture
    def backend(self) -> str:
        raise NotImplementedError("a subclass of FunctionBackendContract provides the names")

    def run(self, backend: str, folder: Path, body: str, config: dict[str, Any]
            ) -> list[dict[str, Any]]:
        cls = backend_class(backend)
        instance = cls(objective_module(folder, body), [str(folder)], "loss", 3,
                       required_options(cls.Options))
        with reports() as caught:
            instance.run(config)
        return caught

    def test_a_returned_number_is_reported_as_the_study_metric(self, backend: str,
                                                                tmp_path: Path) -> None:
        caught = self.run(backend, tmp_path, "return config['units'] * 0.5", {"units": 4})
        assert caught == [{"loss": 2.0}]
        assert type(caught[0]["loss"]) is float

    def test_a_returned_mapping_is_reported_as_it_is(self, backend: str,
                                                      tmp_path: Path) -> None:
        caught = self.run(backend, tmp_path, "return {'loss': 1.5, 'acc': config['units']}",
                          {"units": 7})
        assert caught == [{"loss": 1.5, "acc": 7}]

    def test_reports_made_by_the_objective_are_kept_and_none_added(self, backend: str,
                                                                   tmp_path: Path) -> None:
        body = "for step in range(1, 4):\n    sdk.report({'loss': 1.0 / step, 'step': step})"
        caught = self.run(backend, tmp_path, body, {"units": 4})
        assert caught == [{"loss": 1.0, "step": 1}, {"loss": 0.5, "step": 2},
                          {"loss": 1.0 / 3, "step": 3}]

    def test_a_returned_value_of_another_kind_is_refused_naming_the_metric(
            self, backend: str, tmp_path: Path) -> None:
        with pytest.raises(TypeError, match="the metric 'loss'"):
            self.run(backend, tmp_path, "return 'done'", {"units": 4})

    def test_an_objective_that_cannot_be_imported_is_an_objective_error(
            self, backend: str, tmp_path: Path) -> None:
        cls = backend_class(backend)
        instance = cls("no_such_module_here:objective", [str(tmp_path)], "loss", 3,
                       required_options(cls.Options))
        with reports(), pytest.raises(ObjectiveError, match="no module named"):
            instance.run({"units": 4})


__all__ = [
    "BackendContract",
    "FunctionBackendContract",
    "backend_spec",
    "function_backends",
    "objective_module",
    "reports",
    "required_options",
]
