"""Turns a study file into a :class:`StudySpec`, or a :class:`SpecError` listing every problem.

Structure is checked by the pydantic models of :mod:`searchsvc.spec.file_schema`; the rules that
relate fields (ranges, roles, conditions) are checked here, each with its own message.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Hashable, Mapping
from dataclasses import replace
from pathlib import Path as FsPath
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from searchsvc.core.commands import COMMAND_OBJECTIVE
from searchsvc.core.objectives import Constraint, Objective
from searchsvc.core.stopping import StoppingRule
from searchsvc.errors import SpecError, SpecIssue
from searchsvc.plugins import BACKENDS, SEARCHERS, TRACKERS
from searchsvc.spec.file_schema import (
    UNION_TAGS,
    BudgetFile,
    CheckpointsFile,
    DimensionalityFile,
    EarlyStoppingFile,
    NoiseFile,
    ParameterFile,
    ResourcesFile,
    StudyFile,
    WarmStartFile,
)
from searchsvc.spec.model import (
    Budget,
    Checkpoints,
    ChoiceParameter,
    Condition,
    Dimensionality,
    FixedParameter,
    Noise,
    Parameter,
    RangeParameter,
    Resources,
    Role,
    StudySpec,
    Tracking,
)
from searchsvc.spec.source import SpecSource, read_yaml

PARAMETER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECTIONS: dict[str, type[BaseModel]] = {
    "budget": BudgetFile,
    "resources": ResourcesFile,
    "checkpoints": CheckpointsFile,
    "noise": NoiseFile,
    "warm_start": WarmStartFile,
    "dimensionality": DimensionalityFile,
    "early_stopping": EarlyStoppingFile,
}


def load_spec(path: str | FsPath) -> StudySpec:
    """Read and validate the study file at ``path``."""
    path = FsPath(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        issue = SpecIssue((), f"cannot read file: {exc.strerror}", file=str(path))
        raise SpecError([issue]) from None
    return parse_spec(raw, file=str(path))


def parse_spec(text: str | bytes, file: str = "<spec>") -> StudySpec:
    """Validate study-file text (YAML or JSON); ``file`` names it in error messages."""
    data, source, issues = read_yaml(text, file)
    return spec_from_data(data, source, issues)


def spec_from_data(data: Any, source: SpecSource, issues: list[SpecIssue] | None = None
                   ) -> StudySpec:
    """Validate already-parsed data; ``issues`` found while parsing are reported with the rest."""
    issues = list(issues or [])
    if not isinstance(data, dict):
        raise SpecError([*issues, source.issue((), "a study file must be a mapping of fields",
                                               data)])
    try:
        model = StudyFile.model_validate(data)
    except ValidationError as exc:
        found = [issue_from_pydantic(e, source) for e in exc.errors()]
        raise SpecError([*issues, *found]) from None
    try:
        spec = _SemanticCheck(model, source).build()
    except SpecError as exc:
        raise SpecError([*issues, *exc.issues]) from None
    if issues:
        raise SpecError(issues)
    return spec


def _allowed_fields(loc: tuple[str | int, ...]) -> list[str]:
    if len(loc) == 1:
        return list(StudyFile.model_fields)
    if loc[0] == "parameters" and len(loc) == 3:
        return list(ParameterFile.model_fields)
    if loc[0] in _SECTIONS and len(loc) == 2:
        return list(_SECTIONS[str(loc[0])].model_fields)
    return []


_TYPE_MESSAGES = {
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "string_type": "must be a string",
    "dict_type": "must be a mapping (key: value lines)",
    "model_type": "must be a mapping (key: value lines)",
    "model_attributes_type": "must be a mapping (key: value lines)",
    "list_type": "must be a list",
    "bool_type": "must be true or false",
}


def options_issues(model: type[BaseModel], options: Mapping[str, Any], source: SpecSource,
                   field: str) -> list[SpecIssue]:
    """The problems of ``options`` (the study file's ``field``, e.g. searcher_options) against
    the pydantic ``model`` of the searcher or backend that reads them."""
    try:
        model.model_validate(dict(options))
    except ValidationError as exc:
        return [issue_from_pydantic(e, source, prefix=(field,), model=model)
                for e in exc.errors()]
    return []


def issue_from_pydantic(err: Mapping[str, Any], source: SpecSource,
                        prefix: tuple[str | int, ...] = (),
                        model: type[BaseModel] | None = None) -> SpecIssue:
    """A pydantic validation error as a located, plain-language :class:`SpecIssue`."""
    loc = (*prefix, *(part for part in err["loc"] if part not in UNION_TAGS))
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind == "missing":
        return source.issue(loc, "is required")
    if kind == "extra_forbidden":
        allowed = list(model.model_fields) if model is not None else _allowed_fields(loc)
        message = "unknown field"
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        if close:
            message += f" (did you mean '{close[0]}'?)"
        if allowed:
            message += f"; allowed: {', '.join(allowed)}"
        return source.issue(loc, message)
    if kind == "literal_error":
        message = f"must be {ctx.get('expected', 'one of the allowed values')}"
    elif kind in _TYPE_MESSAGES:
        message = _TYPE_MESSAGES[kind]
    elif kind == "greater_than":
        message = f"must be greater than {ctx.get('gt')}"
    elif kind == "greater_than_equal":
        message = f"must be at least {ctx.get('ge')}"
    elif kind == "value_error":
        message = str(err["msg"]).removeprefix("Value error, ")
    else:
        msg = str(err["msg"])
        message = msg[:1].lower() + msg[1:]
    return source.issue(loc, message, err.get("input"))




class _SemanticCheck:
    """Checks the rules that relate fields, collecting every problem before failing."""

    def __init__(self, model: StudyFile, source: SpecSource):
        self.model = model
        self.source = source
        self.issues: list[SpecIssue] = []

    def fail(self, path: tuple[str | int, ...], message: str, *value: Any) -> None:
        self.issues.append(self.source.issue(path, message, *value))

    def build(self) -> StudySpec:
        m = self.model
        objective, backend_name, backend_options = self._runner()
        backend = BACKENDS.get(backend_name) if backend_name in BACKENDS else None
        if not m.parameters and not (backend and backend.own_space):
            self.fail(("parameters",), "declare at least one parameter")
        params: dict[str, Parameter] = {}
        for name, raw in m.parameters.items():
            param = self._parameter(name, raw)
            if param is not None:
                params[name] = param
        params = self._conditions(params)
        order = self._dependency_order(params)
        budget = self._budget(m.budget)
        resources = self._resources(m.resources)
        objectives = self._objectives()
        constraints = self._constraints({o.name for o in objectives})
        noise = self._noise(params, len(objectives) > 1)
        self._dimensionality(backend)
        early_stopping = self._early_stopping(backend, budget, len(objectives) > 1)
        tracking = self._tracking(m.tracking)
        if self.issues:
            raise SpecError(self.issues)
        return StudySpec(
            name=m.study,
            description=m.description,
            objective=objective,
            backend=backend_name,
            backend_options=MappingProxyType(backend_options),
            metric=objectives[0].name,
            mode=objectives[0].mode,
            objectives=objectives,
            constraints=constraints,
            searcher=m.searcher,
            searcher_options=MappingProxyType(dict(m.searcher_options)),
            budget=budget,
            resources=resources,
            priority=m.priority,
            seed=m.seed,
            parameters=MappingProxyType(params),
            parameter_order=order,
            checkpoints=Checkpoints(keep_best=m.checkpoints.keep_best),
            noise=noise,
            parent=m.parent,
            warm_start=m.warm_start.study if m.warm_start else None,
            tracking=tracking,
            dimensionality=Dimensionality(every=m.dimensionality.every,
                                          until=m.dimensionality.until,
                                          stop_collapsed=m.dimensionality.stop_collapsed),
            early_stopping=early_stopping,
            source=self.source,
        )

    def _runner(self) -> tuple[str, str, dict[str, Any]]:
        """(objective, backend, backend options): a ``{command: ...}`` objective is the
        ``command`` backend with those options, and the backend's own objective."""
        m = self.model
        if isinstance(m.objective, str):
            return m.objective, m.backend, dict(m.backend_options)
        [runner] = BACKENDS.having("runs_commands")
        if self.source.has(("backend",)) and m.backend != runner:
            self.fail(("backend",), f"a command objective runs with backend '{runner}' "
                      "(remove `backend`)", m.backend)
        if m.backend_options:
            self.fail(("backend_options",), "a command objective takes its options in "
                      "`objective:` itself (remove `backend_options`)")
        options = m.objective.model_dump(exclude_defaults=True)
        return COMMAND_OBJECTIVE, runner, options

    def _dimensionality(self, backend: Any) -> None:
        """Dimensionality is measured by ``sdk.watch`` in PyTorch objectives: the study of a
        backend whose models have no such hook (``no_dimensionality_because``) that sets the
        section is told so rather than silently measuring nothing. Stopping collapsed trials
        needs a ``multi_fidelity`` searcher."""
        m = self.model
        because = backend.no_dimensionality_because if backend else ""
        if "dimensionality" in m.model_fields_set and because:
            self.fail(("dimensionality",), f"dimensionality is measured by sdk.watch in PyTorch "
                      f"objectives; the {backend.name} backend's {because} (remove the section)")
        elif m.dimensionality.stop_collapsed:
            multi_fidelity = SEARCHERS.having("multi_fidelity")
            if m.searcher not in multi_fidelity:
                self.fail(("dimensionality", "stop_collapsed"), "stop_collapsed stops trials "
                          f"through a multi-fidelity searcher ({', '.join(multi_fidelity)}); "
                          f"searcher {m.searcher!r} has none", True)

    def _early_stopping(self, backend: Any, budget: Budget, multi_objective: bool
                        ) -> StoppingRule | None:
        """The ``early_stopping:`` block as a rule, where one can run: it needs
        ``budget.max_steps`` (rungs and grace periods are steps of it), one metric to rank
        trials by, a searcher that does not stop trials itself (``stops_trials_because``) and a
        backend that leaves the search to searchsvc."""
        raw = self.model.early_stopping
        if raw is None:
            return None
        where = ("early_stopping",)
        searcher = SEARCHERS.get(self.model.searcher) if self.model.searcher in SEARCHERS else None
        problems = len(self.issues)
        if searcher is not None and searcher.stops_trials:
            others = [n for n in SEARCHERS.names() if n not in SEARCHERS.having("stops_trials")]
            self.fail(("early_stopping", "rule"), f"searcher {self.model.searcher!r} "
                      f"{searcher.stops_trials_because}; early_stopping is for the searchers "
                      f"that do not ({', '.join(others)}): remove the block or change searcher",
                      raw.rule)
        if multi_objective:
            self.fail(where, "early stopping ranks trials on one metric; this study has several "
                      "(`metrics`)")
        if backend is not None and backend.runs_own_search:
            self.fail(where, f"backend {self.model.backend!r} runs its own search, which "
                      "searchsvc cannot stop trials of; early_stopping needs backend 'ray'")
        if budget.max_steps is None:
            self.fail(where, "early stopping judges trials at steps of budget.max_steps: set "
                      "budget.max_steps")
        elif raw.grace_period >= budget.max_steps:
            self.fail(("early_stopping", "grace_period"), f"must be below budget.max_steps "
                      f"({budget.max_steps}), or no trial could ever be stopped", raw.grace_period)
        if raw.reduction_factor <= 1:
            self.fail(("early_stopping", "reduction_factor"), "must be above 1",
                      raw.reduction_factor)
        if not 0 < raw.keep < 1:
            self.fail(("early_stopping", "keep"), "must be between 0 and 1 (0.25 keeps the best "
                      "quarter)", raw.keep)
        if raw.brackets is not None and not StoppingRule.has_brackets(raw.rule):
            self.fail(("early_stopping", "brackets"), f"only the hyperband rule has brackets, "
                      f"not {raw.rule!r}", raw.brackets)
        if len(self.issues) > problems:
            return None
        return StoppingRule(raw.rule, raw.grace_period, float(raw.reduction_factor),
                            float(raw.keep), raw.brackets)

    def _noise(self, params: Mapping[str, Parameter], multi_objective: bool) -> Noise | None:
        """Repeats as asked for; by default only when there is a scientific comparison to
        judge (an ordinary optimisation study gets none unless it asks). A multi-objective
        study repeats only when it asks: the ends of its front (``searchers.repeats``)."""
        raw = self.model.noise
        explicit = "noise" in self.model.model_fields_set
        if raw is None or not (explicit or (
                not multi_objective and any(p.role == "scientific" for p in params.values()))):
            return None
        return Noise(top_k=raw.top_k, seeds=raw.seeds, explicit=explicit)

    # -- objectives --------------------------------------------------------------------------

    def _objectives(self) -> tuple[Objective, ...]:
        """``metric``/``mode``, or the ``metrics`` list: exactly one of the two forms."""
        m = self.model
        if m.metrics is not None:
            for key in ("metric", "mode"):
                if getattr(m, key) is not None:
                    self.fail((key,), "give either `metric`/`mode` or `metrics`, not both")
            if not m.metrics:
                self.fail(("metrics",), "list at least one {name, mode}")
                return (Objective("?", "min"),)
            seen: set[str] = set()
            for i, metric in enumerate(m.metrics):
                if not metric.name.strip():
                    self.fail(("metrics", i, "name"), "must not be empty")
                elif metric.name in seen:
                    self.fail(("metrics", i, "name"), "is listed twice", metric.name)
                seen.add(metric.name)
            return tuple(Objective(x.name, x.mode) for x in m.metrics)
        if m.metric is None or m.mode is None:
            for key in ("metric", "mode"):
                if getattr(m, key) is None:
                    self.fail((key,), "is required (or `metrics: [{name, mode}, ...]` for "
                              "several objectives)")
            return (Objective(m.metric or "?", m.mode or "min"),)
        return (Objective(m.metric, m.mode),)

    def _constraints(self, objective_names: set[str]) -> tuple[Constraint, ...]:
        out = []
        for i, raw in enumerate(self.model.constraints):
            path = ("constraints", i)
            if raw.min is None and raw.max is None:
                self.fail(path, "give `min`, `max` or both")
                continue
            if raw.metric in objective_names:
                self.fail((*path, "metric"), "is an objective: bound another metric, or "
                          "drop the objective", raw.metric)
            bounds = [v for v in (raw.min, raw.max) if v is not None]
            if not all(_is_finite(v) for v in bounds):
                self.fail(path, "bounds must be finite numbers", *bounds)
                continue
            if raw.min is not None and raw.max is not None and raw.min > raw.max:
                self.fail((*path, "min"), f"must be at most max ({raw.max})", raw.min)
            out.append(Constraint(raw.metric, None if raw.min is None else float(raw.min),
                                  None if raw.max is None else float(raw.max)))
        return tuple(out)

    # -- parameters --------------------------------------------------------------------------

    def _parameter(self, name: str, raw: ParameterFile) -> Parameter | None:
        path = ("parameters", name)
        if not PARAMETER_NAME.fullmatch(name) or name.startswith("__"):
            self.fail(path, "parameter names must be identifiers (letters, digits, '_'; "
                      "not starting with a digit or '__')", name)
            return None
        given = raw.model_fields_set
        role: Role = raw.role or ("fixed" if "value" in given else "nuisance")
        if role == "fixed":
            return self._fixed(name, raw, given)
        if "value" in given:
            self.fail((*path, "value"), f"`value` is only for fixed parameters; a {role} "
                      "parameter takes low/high or values", raw.value)
            return None
        has_range = "low" in given or "high" in given
        if has_range and raw.values is not None:
            self.fail(path, "give either low/high or values, not both")
            return None
        if raw.values is not None:
            return self._choice(name, role, raw, given)
        if has_range:
            return self._range(name, role, raw, given)
        self.fail(path, f"a {role} parameter needs low and high, or values")
        return None

    def _fixed(self, name: str, raw: ParameterFile, given: set[str]) -> Parameter | None:
        path = ("parameters", name)
        if "value" not in given:
            self.fail(path, "a fixed parameter needs `value`")
            return None
        extra = sorted(given & {"low", "high", "values", "scale", "step"})
        if extra:
            self.fail((*path, extra[0]), "a fixed parameter takes only `value` (and `when`), "
                      f"not {', '.join(extra)}")
            return None
        if not _is_plain_data(raw.value):
            self.fail((*path, "value"), "must be plain data (string, number, boolean, list "
                      "or mapping)", raw.value)
            return None
        return FixedParameter(name=name, value=raw.value)

    def _choice(self, name: str, role: Role, raw: ParameterFile,
                given: set[str]) -> Parameter | None:
        path = ("parameters", name)
        values = list(raw.values or [])
        for key in ("scale", "step"):
            if key in given:
                self.fail((*path, key), f"`{key}` applies to low/high ranges, not to values",
                          getattr(raw, key))
                return None
        if not values:
            self.fail((*path, "values"), "must list at least one value", values)
            return None
        seen: set[tuple[type, Any]] = set()  # a set: a long list must not cost n^2 checks
        for i, v in enumerate(values):
            entry = (type(v), v if isinstance(v, Hashable) else repr(v))
            if entry in seen:
                self.fail((*path, "values", i), "duplicate value", v)
                return None
            seen.add(entry)
        kind = raw.type or _infer_kind(values)
        if kind == "int" and not all(_is_int(v) for v in values):
            bad = next(v for v in values if not _is_int(v))
            self.fail((*path, "values"), "type int needs whole numbers", bad)
            return None
        if kind == "float" and not all(_is_number(v) for v in values):
            bad = next(v for v in values if not _is_number(v))
            self.fail((*path, "values"), "type float needs numbers", bad)
            return None
        if kind == "float":
            values = [float(v) for v in values]
        elif kind == "int":
            values = [int(v) for v in values]
        return ChoiceParameter(name=name, role=role, kind=kind, values=tuple(values))

    def _range(self, name: str, role: Role, raw: ParameterFile,
               given: set[str]) -> Parameter | None:
        path = ("parameters", name)
        ok = True
        for key in ("low", "high"):
            if key not in given or getattr(raw, key) is None:
                self.fail(path, f"a range needs both low and high; `{key}` is missing")
                ok = False
        if not ok:
            return None
        low, high = raw.low, raw.high
        assert low is not None and high is not None
        # Inferred from how the numbers are written: `low: 1` is an int, `low: 1.0` a float.
        kind = raw.type or ("int" if all(_is_int_literal(v) for v in (low, high, raw.step)
                                         if v is not None) else "float")
        scale = raw.scale or "linear"
        if kind == "categorical":
            self.fail((*path, "type"), "a categorical parameter takes `values`, not low/high",
                      kind)
            return None
        if not (_is_finite(low) and _is_finite(high)):
            self.fail((*path, "low" if not _is_finite(low) else "high"),
                      "must be a finite number", low if not _is_finite(low) else high)
            return None
        if kind == "int":
            for key in ("low", "high", "step"):
                v = getattr(raw, key)
                if v is not None and not _is_int(v):
                    self.fail((*path, key), "type int needs whole numbers", v)
                    ok = False
        if low >= high:
            self.fail((*path, "low"), f"low must be less than high ({high})", low)
            ok = False
        if scale == "log" and low <= 0:
            self.fail((*path, "low"), "a log-scale range needs low > 0", low)
            ok = False
        step = raw.step
        if step is not None:
            if scale == "log":
                self.fail((*path, "step"), "`step` cannot be combined with scale: log", step)
                ok = False
            elif step <= 0:
                self.fail((*path, "step"), "must be greater than 0", step)
                ok = False
            elif ok and not _is_finite((high - low) / step):
                self.fail((*path, "step"), "is too small: high - low would take more than "
                          "1e308 steps", step)
                ok = False
            elif ok and not _divides(step, high - low):
                self.fail((*path, "step"), f"must divide high - low ({high - low:g}) evenly",
                          step)
                ok = False
        if role == "scientific" and kind == "float" and step is None:
            self.fail(path, "a scientific parameter must take discrete values: give `values` or "
                      "a `step` (the study compares the metric value by value)")
            ok = False
        if not ok:
            return None
        return RangeParameter(
            name=name, role=role, kind=kind,
            low=int(low) if kind == "int" else float(low),
            high=int(high) if kind == "int" else float(high),
            scale=scale, step=None if step is None else (int(step) if kind == "int" else step),
        )

    # -- conditions --------------------------------------------------------------------------

    def _conditions(self, params: dict[str, Parameter]) -> dict[str, Parameter]:
        result = dict(params)
        for name, raw in self.model.parameters.items():
            if name not in params or not raw.when:
                continue
            path = ("parameters", name, "when")
            conditions = []
            for parent, wanted in raw.when.items():
                cond = self._condition(name, parent, wanted, params, (*path, parent))
                if cond is not None:
                    conditions.append(cond)
            result[name] = _with_conditions(params[name], tuple(conditions))
        return result

    def _condition(self, name: str, parent: str, wanted: Any, params: Mapping[str, Parameter],
                   path: tuple[str | int, ...]) -> Condition | None:
        if parent == name:
            self.fail(path, "a parameter cannot depend on itself", parent)
            return None
        if parent not in params:
            if parent in self.model.parameters:
                return None  # the parent has its own error already
            message = "names a parameter that is not declared"
            close = difflib.get_close_matches(parent, list(params), n=1)
            if close:
                message += f" (did you mean '{close[0]}'?)"
            self.fail(path, message, parent)
            return None
        parent_param = params[parent]
        if not parent_param.is_discrete:
            self.fail(path, f"'{parent}' is a continuous range; conditions need a parameter with "
                      "discrete values", parent)
            return None
        if params[name].role == "scientific" and parent_param.role == "nuisance":
            self.fail(path, "a scientific parameter can only depend on scientific or fixed "
                      f"parameters; '{parent}' is nuisance", parent)
            return None
        values = wanted if isinstance(wanted, list) else [wanted]
        for v in values:
            if not isinstance(v, str | int | float | bool):
                self.fail(path, "condition values must be single values or a list of them", v)
                return None
            # A condition on a fixed parent may name another value: it documents the parameter
            # for the day the fixed value changes. A searched parent must be able to take it.
            if parent_param.role != "fixed" and not parent_param.takes(v):
                self.fail(path, f"'{parent}' never takes this value (its values: "
                          f"{_first_values(parent_param)})", v)
                return None
        return Condition(parent=parent, values=tuple(values))

    def _dependency_order(self, params: Mapping[str, Parameter]) -> tuple[str, ...]:
        """Parameters ordered so that each comes after the ones its `when` names."""
        order: list[str] = []
        state: dict[str, str] = {}
        for root in params:
            if state.get(root) == "done":
                continue
            # Depth-first with an explicit stack: a long chain of `when`s must not exhaust
            # Python's recursion limit.
            trail = [root]
            pending = [iter(self._parents(root, params))]
            state[root] = "visiting"
            while pending:
                parent = next(pending[-1], None)
                if parent is None:
                    pending.pop()
                    done = trail.pop()
                    state[done] = "done"
                    order.append(done)
                elif state.get(parent) == "visiting":
                    cycle = [*trail[trail.index(parent):], parent]
                    self.fail(("parameters", parent, "when"),
                              f"conditions form a cycle: {' -> '.join(cycle)}")
                    return tuple(params)
                elif state.get(parent) != "done":
                    state[parent] = "visiting"
                    trail.append(parent)
                    pending.append(iter(self._parents(parent, params)))
        return tuple(order)

    @staticmethod
    def _parents(name: str, params: Mapping[str, Parameter]) -> list[str]:
        return [c.parent for c in params[name].when if c.parent in params]

    # -- sections ----------------------------------------------------------------------------

    def _tracking(self, raw: Mapping[str, Any]) -> Tracking:
        """Each key a registered tracker (:data:`searchsvc.plugins.TRACKERS`), holding a
        mapping of its ``Options``; `{}`, `true` or an empty value turn it on with its
        defaults, `false` or `off` (or leaving it out) turn it off."""
        settings: dict[str, BaseModel] = {}
        for name, value in raw.items():
            path = ("tracking", name)
            if name not in TRACKERS:
                message = "unknown field"
                close = difflib.get_close_matches(name, TRACKERS.names(), n=1)
                if close:
                    message += f" (did you mean '{close[0]}'?)"
                self.fail(path, f"{message}; allowed: {', '.join(TRACKERS.names())}")
                continue
            if value is False or value == "off":
                continue
            if value is not None and value is not True and not isinstance(value, dict):
                self.fail(path, "must be a mapping of options, `true` or `off`", value)
                continue
            model: type[BaseModel] = TRACKERS.get(name).Options
            try:
                settings[name] = model.model_validate(value if isinstance(value, dict) else {})
            except ValidationError as exc:
                self.issues += [issue_from_pydantic(e, self.source, prefix=path, model=model)
                                for e in exc.errors()]
        return Tracking(**settings)

    def _budget(self, raw: BudgetFile) -> Budget:
        for key in ("time_limit_s", "trial_timeout_s"):
            v = getattr(raw, key)
            if v is not None and not v > 0:
                self.fail(("budget", key), "must be greater than 0 seconds", v)
        return Budget(
            trials=raw.trials, max_concurrent=raw.max_concurrent, max_steps=raw.max_steps,
            time_limit_s=raw.time_limit_s, max_failures=raw.max_failures,
            trial_timeout_s=raw.trial_timeout_s, fail_fast=raw.fail_fast,
        )

    def _resources(self, raw: ResourcesFile) -> Resources:
        if raw.cpu < 0:
            self.fail(("resources", "cpu"), "must be at least 0", raw.cpu)
        auto = raw.gpu == "auto"
        given = "workers" in raw.model_fields_set
        if auto and given:
            self.fail(("resources", "gpu"), "`auto` packs single-process trials onto shared "
                      "GPUs; a data-parallel trial (`workers`) needs a number", raw.gpu)
        # auto: the first trials hold a whole GPU each (what they measure decides the rest)
        gpu = 1.0 if auto else float(raw.gpu)
        if gpu < 0:
            self.fail(("resources", "gpu"), "must be at least 0", raw.gpu)
        elif gpu > 1 and gpu != int(gpu):
            self.fail(("resources", "gpu"), "above 1 a trial needs whole GPUs (fractions are "
                      "for sharing one GPU)", raw.gpu)
        if raw.cpu == 0 and gpu == 0:
            self.fail(("resources",), "a trial needs some cpu or gpu")
        return Resources(cpu=float(raw.cpu), gpu=gpu, gpu_auto=auto,
                         workers=raw.workers if given else None)


def _with_conditions(param: Parameter, when: tuple[Condition, ...]) -> Parameter:
    return replace(param, when=when)


def _is_finite(v: float) -> bool:
    """Finite, and within float range (an int of 400 digits is not)."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _first_values(param: Parameter, count: int = 10) -> str:
    """The first ``count`` values of a discrete parameter, for messages (never enumerates a
    range beyond them)."""
    shown: list[Any]
    if isinstance(param, RangeParameter):
        shown = [param.grid_value(i) for i in range(min(count, param.grid_size))]
        more = param.grid_size > count
    else:
        shown, more = list(param.choices()[:count]), len(param.choices()) > count
    return ", ".join(repr(v) for v in shown) + (", ..." if more else "")


def _is_int(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        isinstance(v, float) and v.is_integer()
    )


def _is_int_literal(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _infer_kind(values: list[Any]) -> Literal["float", "int", "categorical"]:
    if all(_is_int_literal(v) for v in values):
        return "int"
    if all(_is_number(v) for v in values):
        return "float"
    return "categorical"


def _divides(step: float, width: float) -> bool:
    if _is_int_literal(step) and _is_int_literal(width):
        return width % step == 0  # exact, even beyond float precision
    ratio = width / step
    return abs(ratio - round(ratio)) < 1e-9 * max(1.0, abs(ratio))


def _is_plain_data(v: Any) -> bool:
    if v is None or isinstance(v, str | int | float | bool):
        return True
    if isinstance(v, list):
        return all(_is_plain_data(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _is_plain_data(x) for k, x in v.items())
    return False
