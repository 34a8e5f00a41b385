"""The ``keras_tuner`` backend: a KerasTuner hypermodel (a ``build(hp)`` function or a
``keras_tuner.HyperModel``) built with the values searchsvc's searcher chose, checked against
the hyperparameters the hypermodel declares, and trained with a report every epoch (so
schedulers such as ASHA can stop it). Keras and KerasTuner are imported only here, lazily."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from searchsvc.backends.base import Backend
from searchsvc.core.callables import CallableRef
from searchsvc.errors import ObjectiveError
from searchsvc.spec.references import ModuleCallable


class KerasTunerOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    data: ModuleCallable = Field(description=(
        '"module:callable" returning (x_train, y_train, x_val, y_val), or a dict of '
        "keyword arguments for fit() (x, y, validation_data, ...)"))
    batch_size: int | None = Field(default=None, ge=1)
    fit_options: dict[str, Any] = Field(default_factory=dict, description=(
        "further keyword arguments for fit() (epochs comes from budget.max_steps)"))


class KerasTunerBackend(Backend):
    name = "keras_tuner"
    summary = ("a KerasTuner hypermodel, build(hp) or HyperModel, trained with searchsvc's "
               "values; every epoch reported")
    Options = KerasTunerOptions
    no_dimensionality_because = "Keras models have no such hook"

    def run(self, config: dict[str, Any]) -> None:
        import keras_tuner as kt

        opts: KerasTunerOptions = self.options  # type: ignore[assignment]
        hypermodel = _as_hypermodel(self.objective())
        hp = kt.HyperParameters()
        hp.values.update(config)
        model = hypermodel.build(hp)
        check_values(hp, config)
        fit_kwargs = _fit_data(self.resolve(opts.data)())
        fit_kwargs.update(opts.fit_options)
        if opts.batch_size is not None:
            fit_kwargs.setdefault("batch_size", opts.batch_size)
        fit_kwargs.update(epochs=self.max_steps or fit_kwargs.get("epochs", 10), verbose=0,
                          callbacks=[*fit_kwargs.get("callbacks", []), _epoch_reporter()])
        hypermodel.fit(hp, model, **fit_kwargs)


def _as_hypermodel(obj: Any) -> Any:
    """A ``HyperModel`` instance from a HyperModel, a HyperModel class or a build function."""
    import keras_tuner as kt

    if isinstance(obj, type) and issubclass(obj, kt.HyperModel):
        return obj()
    if isinstance(obj, kt.HyperModel):
        return obj
    if callable(obj):
        class BuildFunction(kt.HyperModel):
            def build(self, hp: Any) -> Any:
                return obj(hp)

        return BuildFunction()
    raise ObjectiveError(f"a keras_tuner objective must be a build(hp) function or a "
                         f"keras_tuner.HyperModel (got {type(obj).__name__})")


def check_values(hp: Any, config: Mapping[str, Any]) -> None:
    """Refuse values the hypermodel does not declare or that lie outside what it declares
    (KerasTuner itself accepts any externally set value)."""
    declared = {p.name: p for p in hp.space}
    for name, value in config.items():
        param = declared.get(name)
        if param is None:
            raise ObjectiveError(
                f"hyperparameter {name!r} = {value!r}: the hypermodel declares no such "
                f"hyperparameter (it declares: {', '.join(sorted(declared)) or 'none'})")
        problem = _out_of_space(param, value)
        if problem:
            raise ObjectiveError(f"hyperparameter {name!r} = {value!r} {problem}")


def _out_of_space(param: Any, value: Any) -> str | None:
    kind = type(param).__name__
    if kind == "Choice":
        return None if value in param.values else f"is not one of {list(param.values)}"
    if kind == "Boolean":
        return None if isinstance(value, bool) else "is not a boolean"
    if kind == "Fixed":
        return None if value == param.value else f"differs from the fixed value {param.value!r}"
    if kind in ("Int", "Float"):
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(
                value):
            return "is not a number"
        if kind == "Int" and value != int(value):
            return "is not an integer"
        if not param.min_value <= value <= param.max_value:
            return f"is outside the hypermodel's range [{param.min_value}, {param.max_value}]"
    return None


def _fit_data(data: Any) -> dict[str, Any]:
    if isinstance(data, Mapping):
        return dict(data)
    if isinstance(data, tuple | list) and len(data) == 4:
        x_train, y_train, x_val, y_val = data
        return {"x": x_train, "y": y_train, "validation_data": (x_val, y_val)}
    raise ObjectiveError("backend_options.data must return (x_train, y_train, x_val, y_val) "
                         f"or a dict of fit() arguments (got {type(data).__name__})")


def _epoch_reporter() -> Any:
    # The same callback a user's own model.fit takes: one reporter for every Keras trial.
    from searchsvc.integrations.keras import SearchsvcCallback

    return SearchsvcCallback()


def starter_study(objective: str, hypermodel: Any) -> str:
    """A study file declaring the hyperparameters ``hypermodel`` registers when built once with
    its default values (all nuisance; choose the scientific ones yourself)."""
    import keras_tuner as kt

    hp = kt.HyperParameters()
    _as_hypermodel(hypermodel).build(hp)
    lines = [f"  {p.name}: {{{_parameter_yaml(p)}}}" for p in hp.space]
    module = CallableRef.parse(objective).module
    name = module.rsplit(".", 1)[-1].replace("_", "-").lower()
    return "\n".join([
        f"# Starter study for {objective}, discovered by building it once with default values.",
        "# Discovery sees only the hyperparameters that build registers on that path: ones",
        "# created under other values (a loop over hp.Int('num_layers'), an if on hp.Boolean,",
        "# a conditional_scope) are missing; add them with `when:`. Pick the scientific ones.",
        f"study: {name}",
        f"objective: {objective}",
        "backend: keras_tuner",
        f'backend_options: {{data: "{module}:load_data"}}  # -> x_train, y_train, x_val, y_val',
        "metric: val_loss",
        "mode: min",
        "searcher: quasi_random",
        "budget: {trials: 20, max_concurrent: 2, max_steps: 10}",
        "parameters:",
        *lines,
        "",
    ])


def _parameter_yaml(p: Any) -> str:
    kind = type(p).__name__
    parts = ["role: fixed" if kind == "Fixed" else "role: nuisance"]
    if kind == "Fixed":
        parts.append(f"value: {_yaml_value(p.value)}")
    elif kind == "Boolean":
        parts.append("values: [false, true]")
    elif kind == "Choice":
        parts.append(f"values: [{', '.join(_yaml_value(v) for v in p.values)}]")
    else:
        parts.append(f"type: {'int' if kind == 'Int' else 'float'}")
        parts += [f"low: {_yaml_value(p.min_value)}", f"high: {_yaml_value(p.max_value)}"]
        if p.step and not (kind == "Int" and p.step == 1):
            parts.append(f"step: {_yaml_value(p.step)}")
        if getattr(p, "sampling", "linear") in ("log", "reverse_log"):
            parts.append("scale: log")
    conditions = [c for c in getattr(p, "conditions", []) if hasattr(c, "values")]
    if conditions:
        when = ", ".join(f"{c.name}: [{', '.join(_yaml_value(v) for v in c.values)}]"
                         for c in conditions)
        parts.append(f"when: {{{when}}}")
    return ", ".join(parts)


def _yaml_value(value: Any) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if "e" in repr(value) or "." in repr(value) else f"{value}.0"
    return json.dumps(value) if isinstance(value, str) else str(value)
