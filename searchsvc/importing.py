"""A W&B sweep file as a searchsvc study file (``searchsvc import``): its program becomes a
command objective whose ``wandb.log`` calls are its reports (W&B then runs offline in each
trial's folder), its method a searcher, its metric the study's, every searched parameter a
nuisance one, ``early_terminate`` an early-stopping rule and ``run_cap`` the budget. Whatever
has no equivalent is listed, key by key, never dropped in silence.

W&B's sweep configuration: https://docs.wandb.ai/guides/sweeps/sweep-config-keys (the keys
``program``, ``command``, ``method``, ``metric``, ``parameters``, ``early_terminate``,
``run_cap``, ``name``, ``description``, ``project``, ``entity``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from searchsvc.core.commands import WANDB_METRICS

DEFAULT_TRIALS = 20  # a random or Bayesian sweep without run_cap runs until stopped
_METHODS = {"grid": ("grid", {}), "random": ("random", {}),
            "bayes": ("bayesian", {"sampler": "gp"})}  # W&B's bayes is a Gaussian process
# The pieces of a sweep's `command:` list, as W&B expands them.
_ARGS = {"${args}": "equals", "${args_no_hyphens}": "hydra",
         "${args_no_boolean_flags}": "equals"}
_IGNORED = {"project", "entity"}  # where W&B would upload: the runs stay offline here


@dataclass
class ImportedSweep:
    """The study file (as a mapping, in the file's key order) and what could not be mapped."""

    study: dict[str, Any]
    unmapped: list[str] = field(default_factory=list)


def sweep_study(sweep: Mapping[str, Any], name: str) -> ImportedSweep:
    """The study file for W&B sweep configuration ``sweep``, named ``name`` unless the sweep
    has a name of its own."""
    out = ImportedSweep({})
    known = {"program", "command", "method", "metric", "parameters", "early_terminate",
             "run_cap", "name", "description", *_IGNORED}
    out.unmapped += [f"{key}: not a sweep key searchsvc knows" for key in sweep
                     if key not in known]
    out.unmapped += [f"{key}: {sweep[key]!r} kept for W&B only: the runs stay offline in each "
                     "trial's folder (`wandb sync` uploads them)" for key in _IGNORED
                     if key in sweep]
    study = out.study
    study["study"] = _study_name(str(sweep.get("name") or name))
    if sweep.get("description"):
        study["description"] = str(sweep["description"])
    study["objective"] = _objective(sweep, out)
    metric = dict(sweep.get("metric") or {})
    study["metric"] = str(metric.get("name", "loss"))
    study["mode"] = "max" if metric.get("goal") == "maximize" else "min"
    if "name" not in metric:
        out.unmapped.append("metric: the sweep names no metric; `loss` assumed")
    if "target" in metric:
        out.unmapped.append(f"metric.target: {metric['target']!r} (searchsvc runs the budget)")
    _method(sweep, out)
    study["noise"] = "off"
    study["budget"] = _budget(sweep, out)
    stopping = _early_terminate(sweep.get("early_terminate"), out)
    if stopping:
        study["early_stopping"] = stopping
    study["parameters"] = {n: p for n, p in (
        (n, _parameter(n, spec, out)) for n, spec in dict(sweep.get("parameters") or {}).items())
        if p is not None}
    return out


def _study_name(text: str) -> str:
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-_")
    return cleaned[:100] or "imported-sweep"


def _objective(sweep: Mapping[str, Any], out: ImportedSweep) -> dict[str, Any]:
    program = str(sweep.get("program") or "train.py")
    if "program" not in sweep:
        out.unmapped.append("program: none given; train.py assumed")
    command = sweep.get("command") or ["${env}", "${interpreter}", "${program}", "${args}"]
    words, args = [], "none"
    for piece in command:
        piece = str(piece)
        if piece == "${env}":
            continue
        if piece == "${interpreter}":
            words.append("python")
        elif piece == "${program}":
            words.append(program if not program.endswith(".py") or words else
                         f"python {program}")
        elif piece in _ARGS:
            args = _ARGS[piece]
            if piece == "${args_no_boolean_flags}":
                out.unmapped.append("command: ${args_no_boolean_flags} passed as --name=value "
                                    "with booleans as flags")
        elif piece.startswith("${"):
            out.unmapped.append(f"command: {piece} has no equivalent (dropped)")
        else:
            words.append(piece)
    objective: dict[str, Any] = {"command": " ".join(words), "metrics": WANDB_METRICS}
    if args != "equals":
        objective["args"] = args
    return objective


def _method(sweep: Mapping[str, Any], out: ImportedSweep) -> None:
    method = str(sweep.get("method") or "random")
    searcher, options = _METHODS.get(method, ("random", {}))
    if method not in _METHODS:
        out.unmapped.append(f"method: {method!r} unknown; random search used")
    out.study["searcher"] = searcher
    if options:
        out.study["searcher_options"] = dict(options)


def _budget(sweep: Mapping[str, Any], out: ImportedSweep) -> dict[str, Any]:
    budget: dict[str, Any] = {}
    if "run_cap" in sweep:
        budget["trials"] = int(sweep["run_cap"])
    elif sweep.get("method") != "grid":
        budget["trials"] = DEFAULT_TRIALS
        out.unmapped.append(f"run_cap: none given; budget.trials set to {DEFAULT_TRIALS} "
                            "(a sweep without it runs until stopped)")
    terminate = dict(sweep.get("early_terminate") or {})
    if "max_iter" in terminate:
        budget["max_steps"] = int(terminate["max_iter"])
    return budget


def _early_terminate(spec: Any, out: ImportedSweep) -> dict[str, Any] | None:
    if not spec:
        return None
    terminate = dict(spec)
    if terminate.get("type") != "hyperband":
        out.unmapped.append(f"early_terminate: type {terminate.get('type')!r} has no "
                            "equivalent (only hyperband)")
        return None
    if "max_iter" not in terminate:
        out.unmapped.append("early_terminate: no max_iter, so no budget.max_steps: early "
                            "stopping left out (set budget.max_steps and add early_stopping)")
        return None
    rule: dict[str, Any] = {"rule": "hyperband",
                            "grace_period": int(terminate.get("min_iter", 1))}
    if "eta" in terminate:
        rule["reduction_factor"] = float(terminate["eta"])
    if "s" in terminate:
        rule["brackets"] = int(terminate["s"])
    for key in sorted(set(terminate) - {"type", "min_iter", "max_iter", "eta", "s"}):
        out.unmapped.append(f"early_terminate.{key}: {terminate[key]!r} has no equivalent")
    return rule


def _parameter(name: str, spec: Any, out: ImportedSweep) -> dict[str, Any] | None:
    """One sweep parameter as a study parameter (nuisance unless held), or None and why."""
    if not isinstance(spec, Mapping):
        out.unmapped.append(f"parameters.{name}: {spec!r} is not a parameter mapping")
        return None
    if "parameters" in spec:
        out.unmapped.append(f"parameters.{name}: nested parameters have no equivalent; "
                            "name them a__b with `args: hydra`")
        return None
    if "value" in spec:
        return {"role": "fixed", "value": spec["value"]}
    if "values" in spec:
        if "probabilities" in spec:
            out.unmapped.append(f"parameters.{name}.probabilities: values are drawn evenly")
        return {"role": "nuisance", "values": list(spec["values"])}
    return _range(name, dict(spec), out)


def _range(name: str, spec: dict[str, Any], out: ImportedSweep) -> dict[str, Any] | None:
    low, high = spec.get("min"), spec.get("max")
    integers = isinstance(low, int) and isinstance(high, int)
    kind = spec.get("distribution") or ("int_uniform" if integers else "uniform")
    if low is None or high is None:
        out.unmapped.append(f"parameters.{name}: distribution {kind!r} without min and max "
                            "has no equivalent")
        return None
    found: dict[str, Any] = {"role": "nuisance", "low": low, "high": high}
    if kind == "int_uniform":
        found["type"] = "int"
    elif kind == "log_uniform_values":
        found["scale"] = "log"
    elif kind == "log_uniform":  # W&B's bounds are natural-log exponents
        found.update(low=math.exp(low), high=math.exp(high), scale="log")
    elif kind == "q_uniform":
        found["step"] = spec.get("q", 1.0)
    elif kind != "uniform":
        out.unmapped.append(f"parameters.{name}: distribution {kind!r} has no equivalent; "
                            "searched uniformly between min and max")
    return found
