"""The study file's structure as pydantic models: field names, types and defaults.

These models catch structural mistakes (unknown keys, wrong types, missing fields) and publish the
JSON Schema (`searchsvc schema`). Rules that relate fields to each other (low < high, roles,
conditions) live in :mod:`searchsvc.spec.validate`, which gives each its own precise message.
"""

from __future__ import annotations

import re
import shlex
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    Tag,
    WithJsonSchema,
    field_validator,
)

from searchsvc.core.commands import WANDB_METRICS, ArgStyle
from searchsvc.core.records import MAX_PRIORITY
from searchsvc.core.stopping import RuleKind
from searchsvc.plugins import BACKENDS, SEARCHERS, TRACKERS
from searchsvc.registry import Registry
from searchsvc.spec.references import ModuleCallable

STUDY_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
OBJECTIVE_REF = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_.]*"
)


def _number(value: Any) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    return value


def _scalar(value: Any) -> str | int | float | bool:
    if not isinstance(value, str | int | float | bool):
        raise ValueError("must be a single value (string, number or boolean)")
    return value


Number = Annotated[float | int, PlainValidator(_number), WithJsonSchema({"type": "number"})]
Scalar = Annotated[
    str | int | float | bool,
    PlainValidator(_scalar),
    WithJsonSchema({"type": ["string", "number", "boolean"]}),
]


class _FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ParameterFile(_FileModel):
    """One hyperparameter: a range (low/high), a list of values, or a fixed value."""

    role: Literal["scientific", "nuisance", "fixed"] | None = Field(
        None, description="scientific: measured; nuisance: re-tuned per scientific value; "
        "fixed: held constant. Default: fixed when `value` is given, else nuisance.")
    type: Literal["float", "int", "categorical"] | None = Field(
        None, description="Inferred from low/high/values when omitted.")
    low: Number | None = Field(None, description="Lowest value (included).")
    high: Number | None = Field(None, description="Highest value (included).")
    scale: Literal["linear", "log"] | None = Field(None, description="Sampling scale of a range.")
    step: Number | None = Field(None, description="Grid spacing of a range (linear scale only).")
    values: list[Scalar] | None = Field(None, description="The values to choose from.")
    value: Any = Field(None, description="The held value of a fixed parameter.")
    when: dict[str, Any] | None = Field(
        None, description="Exists only when every named parameter takes the given value "
        "(or one of a list of values).")
    description: str | None = None


class BudgetFile(_FileModel):
    trials: int | None = Field(None, gt=0, description="Total trials (grid: may be omitted).")
    max_concurrent: int | None = Field(None, gt=0, description="Trials running at once.")
    max_steps: int | None = Field(None, gt=0, description="Steps/epochs of a full trial.")
    time_limit_s: Number | None = Field(None, description="Wall-clock cap for the whole study.")
    max_failures: int = Field(0, ge=0, description="Retries of a failed trial.")
    trial_timeout_s: Number | None = Field(None, description="Wall-clock cap for one trial.")
    fail_fast: int = Field(
        3, ge=0, description="Stop the study when its first N trials all failed with the same "
        "exception and none produced a result (0: never).")


def _gpu(value: Any) -> str | float | int:
    if value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number of GPUs or `auto`")
    return value


Gpu = Annotated[str | float | int, PlainValidator(_gpu),
                WithJsonSchema({"oneOf": [{"type": "number"}, {"enum": ["auto"]}]})]


class ResourcesFile(_FileModel):
    cpu: Number = Field(1, description="CPUs per trial (per worker with `workers`).")
    gpu: Gpu = Field(0, description="GPUs per trial (per worker with `workers`); may be "
                     "fractional below 1. `auto`: the first trial runs on a whole GPU, and "
                     "the rest are packed by its measured peak memory and utilisation "
                     "(docs/gpus.md).")
    workers: int = Field(1, ge=1, le=1024, description="Ray Train workers per trial: when set, "
                         "each trial is a Ray Train run (PyTorch DDP above 1) over this many "
                         "processes, each with `cpu` and `gpu`; unset, a plain Tune trial.")


class CheckpointsFile(_FileModel):
    keep_best: int | None = Field(None, gt=0, description="Checkpoints kept per trial, best first.")


class NoiseFile(_FileModel):
    """Seed repeats after the search: each arm's ``top_k`` configurations run again with
    ``seeds`` new seeds, to measure trial-to-trial noise (docs/DESIGN.md, "Noise")."""

    top_k: int = Field(2, gt=0, le=20, description="Best configurations of each arm repeated.")
    seeds: int = Field(3, ge=2, le=50, description="New seeds each repeated configuration gets.")


def _noise(value: Any) -> NoiseFile | None:
    # `noise: off` (YAML 1.1 reads it as false) or `noise: false` turns repeats off.
    if value is False or value == "off":
        return None
    if isinstance(value, NoiseFile):
        return value
    if not isinstance(value, dict):
        raise ValueError("must be a mapping {top_k: K, seeds: S} or `off`")
    return NoiseFile.model_validate(value)


NoiseSetting = Annotated[
    NoiseFile | None,
    PlainValidator(_noise),
    WithJsonSchema({"oneOf": [NoiseFile.model_json_schema(), {"enum": ["off", False]}]}),
]


def _every(value: Any) -> str | int:
    if value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("must be `auto` or a positive whole number of training forward passes")
    return value


def _until(value: Any) -> str | int | float:
    if value is False or value == "off":
        return "off"
    if isinstance(value, float) and 0 < value < 1:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ValueError("must be `off`, a fraction of max_steps between 0 and 1 (e.g. 0.25), or a "
                     "positive whole number of reported steps")


Every = Annotated[str | int, PlainValidator(_every),
                  WithJsonSchema({"oneOf": [{"enum": ["auto"]},
                                            {"type": "integer", "minimum": 1}]})]
Until = Annotated[str | int | float, PlainValidator(_until),
                  WithJsonSchema({"oneOf": [{"enum": ["off", False]},
                                            {"type": "number", "exclusiveMinimum": 0,
                                             "exclusiveMaximum": 1},
                                            {"type": "integer", "minimum": 1}]})]


class DimensionalityFile(_FileModel):
    """When ``sdk.watch`` measures the watched layers' dimensionality (docs/dimensionality.md)."""

    every: Every = Field("auto", description=(
        "Training forward passes between measurements, or `auto` (the default): spaced so "
        "that measuring costs at most 5% of the trial's training time."))
    until: Until = Field("off", description=(
        "Stop measuring after this many reported steps, or this fraction of budget.max_steps; "
        "`off` (the default): through the whole trial."))
    stop_collapsed: bool = Field(False, description=(
        "Multi-fidelity searchers (those that stop trials at rungs) also stop a trial once a "
        "watched layer collapses (below 2, or below 25% of its early value). Off by default."))


class EarlyStoppingFile(_FileModel):
    """Early stopping with any searcher that does not stop trials itself: each trial is compared
    only with trials of its own scientific arm (docs/early-stopping.md)."""

    rule: RuleKind = Field(description=(
        "asha: successive halving at rungs; hyperband: the same in Hyperband brackets; median: "
        "stop a trial worse than the median of its arm's earlier running means; percentile: "
        "stop a trial outside the best `keep` share of its arm's earlier values."))
    grace_period: int = Field(1, ge=1, description="Steps every trial runs before any stop.")
    reduction_factor: Number = Field(3.0, description=(
        "asha, hyperband: only the top 1/reduction_factor of a rung goes on (above 1)."))
    keep: Number = Field(0.5, description=(
        "percentile: the share of each step's values a trial must be among (0.25 keeps the "
        "best quarter)."))
    brackets: int | None = Field(None, ge=1, description=(
        "hyperband: how many brackets (default: every bracket that fits)."))


class MetricFile(_FileModel):
    """One objective of a multi-objective study."""

    name: str = Field(description="A metric the objective reports.")
    mode: Literal["min", "max"]


class ConstraintFile(_FileModel):
    """A bound on a metric the objective reports: trials outside it are infeasible."""

    metric: str = Field(description="A metric the objective reports.")
    min: Number | None = Field(None, description="Lowest feasible value (included).")
    max: Number | None = Field(None, description="Highest feasible value (included).")


class WarmStartFile(_FileModel):
    study: str = Field(description="A stored study whose finished trials seed this study's "
                       "model-based searcher.")


def _command_words(value: str) -> str:
    """A command a shell could split into words (none runs it)."""
    try:
        words = shlex.split(value)
    except ValueError as exc:
        raise ValueError(f"cannot be split into words: {exc}") from None
    if not words:
        raise ValueError("must not be empty")
    return value


class CommandFile(_FileModel):
    """A training script run as it is (``python train.py``), each parameter passed on its
    command line (see :mod:`searchsvc.core.commands`)."""

    command: Annotated[str, AfterValidator(_command_words)] = Field(description=(
        "The command, as a shell would split it (no shell runs): `python` is the workers' "
        "Python. `{name}` places a parameter's value or a trial's own (trial, seed, trial_dir, "
        "checkpoint_dir, max_steps)."))
    args: ArgStyle = Field("equals", description=(
        "How parameters are passed: `--name=value` (equals), `--name value` (space), Hydra "
        "`name=value` overrides (hydra; `a__b` is `a.b`), or only by placeholders (none)."))
    names: dict[str, str] = Field(default_factory=dict, description=(
        "A parameter's name on the command line, e.g. {batch_size: batch-size}."))
    booleans: Literal["flag", "value"] = Field("flag", description=(
        "A boolean in the argparse styles: `--name` when true and nothing when false (flag), "
        "or `--name=true` (value)."))
    metrics: str | None = Field(None, description=(
        "A regular expression with named groups reading the metrics from a line of output, "
        "or `wandb`: the numbers of each wandb.log call (W&B then runs offline in the "
        "trial's folder); default: `name=value` pairs, JSON lines or sdk.report."))
    stop_grace_s: Number = Field(10.0, description=(
        "Seconds a stopped trial's script has after SIGTERM before SIGKILL."))

    @field_validator("metrics")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None and value != WANDB_METRICS:
            try:
                if not re.compile(value).groupindex:
                    raise ValueError("needs named groups, e.g. (?P<val_loss>[0-9.]+)")
            except re.error as exc:
                raise ValueError(f"is not a regular expression: {exc}") from None
        return value

    @field_validator("stop_grace_s")
    @classmethod
    def _grace(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be above 0")
        return value


# The objective is one of two forms, told apart by the value's own type; the tags name each
# form only in pydantic's error locations, from which the checks drop them (UNION_TAGS).
UNION_TAGS = ("module_callable", "command_objective")
Objective = Annotated[
    Annotated[ModuleCallable, Tag(UNION_TAGS[0])] | Annotated[CommandFile, Tag(UNION_TAGS[1])],
    Discriminator(lambda value: UNION_TAGS[0] if isinstance(value, str) else UNION_TAGS[1]),
]


class StudyFile(_FileModel):
    """A searchsvc study file."""

    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, title="searchsvc study file"
    )

    study: str = Field(description="Unique study name: [a-z0-9][a-z0-9_-]*")
    description: str = ""
    objective: Objective = Field(description=(
        '"module:callable" of the training function, or {command: "python train.py", ...}: '
        "a script run as it is."))
    backend: str = Field(BACKENDS.default_name(), description=(
        "How a trial runs: one of the registered backends."))
    backend_options: dict[str, Any] = Field(default_factory=dict, description=(
        "The backend's options, validated by the backend's own schema."))
    metric: str | None = Field(None, description=(
        "Name of the metric the objective reports (or use `metrics` for several)."))
    mode: Literal["min", "max"] | None = Field(None, description="min | max, with `metric`.")
    metrics: list[MetricFile] | None = Field(None, description=(
        "Several objectives, [{name, mode}, ...], instead of metric/mode: a multi-objective "
        "study (with a searcher that searches several objectives)."))
    constraints: list[ConstraintFile] = Field(default_factory=list, description=(
        "[{metric, min, max}, ...]: trials outside a bound are infeasible."))
    searcher: str = Field(SEARCHERS.default_name(), description=(
        "What proposes the trials: one of the registered searchers."))
    searcher_options: dict[str, Any] = Field(default_factory=dict, description=(
        "The searcher's options, validated by the searcher's own schema (the searcher "
        "reference lists each one's)."))
    budget: BudgetFile = Field(default_factory=BudgetFile)
    resources: ResourcesFile = Field(default_factory=ResourcesFile)
    priority: int = Field(0, ge=0, le=MAX_PRIORITY, description=(
        "On a service's shared cluster: a study of higher priority takes the free slots "
        "before those of lower ones. A service caps it per token."))
    seed: int = Field(0, ge=0)
    parameters: dict[str, ParameterFile]
    checkpoints: CheckpointsFile = Field(default_factory=CheckpointsFile)
    noise: NoiseSetting = Field(NoiseFile(), description=(
        "Seed repeats after the search (default {top_k: 2, seeds: 3} when the study has a "
        "scientific parameter), or `off`."))
    parent: str | None = Field(None, description=(
        "The study this one was made from (next_study.yaml sets it): its report compares "
        "the two."))
    warm_start: WarmStartFile | None = Field(None, description=(
        "Feed a stored study's finished trials to a model-based searcher's model (e.g. "
        "Bayesian optimisation's) before the first proposal."))
    early_stopping: EarlyStoppingFile | None = Field(None, description=(
        "Stop weak trials early, within each scientific arm: {rule: asha|hyperband|median|"
        "percentile, grace_period, reduction_factor, keep, brackets}, beside a searcher that "
        "does not stop trials itself."))
    dimensionality: DimensionalityFile = Field(default_factory=DimensionalityFile, description=(
        "When sdk.watch measures representation dimensionality: {every: auto|N, "
        "until: off|FRACTION|STEPS, stop_collapsed: false}."))
    # Each key a registered tracker's name; its value that tracker's options (json_schema()
    # gives them, spec.validate checks them).
    tracking: dict[str, Any] = Field(default_factory=dict, description=(
        "Experiment tracking: each tracker to write to, by name, with its options "
        "(`{}` for its defaults)."))

    @field_validator("study")
    @classmethod
    def _study_name(cls, value: str) -> str:
        if not STUDY_NAME.fullmatch(value) or len(value) > 100:
            raise ValueError(
                "must be lowercase letters, digits, '-' or '_', starting with a letter or digit "
                "(at most 100 characters)"
            )
        return value

    @field_validator("objective")
    @classmethod
    def _objective_ref(cls, value: str | CommandFile) -> str | CommandFile:
        if isinstance(value, str) and not OBJECTIVE_REF.fullmatch(value):
            raise ValueError('must be "module:callable", e.g. "objectives.torch_digits:train"')
        return value

    @field_validator("metric")
    @classmethod
    def _metric_name(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty")
        return value


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the study file, for editors and other tools. The searchers and
    backends a study file may name, and the options each accepts, are the registered ones
    (:mod:`searchsvc.plugins`), each described by its class (``summary``, ``Options``)."""
    schema = StudyFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["allOf"] = [*_named_parts(schema, "searcher", SEARCHERS),
                       *_named_parts(schema, "backend", BACKENDS)]
    _tracking_section(schema)
    # One objective (metric + mode) or several (metrics), never both.
    schema["oneOf"] = [{"required": ["metric", "mode"], "not": {"required": ["metrics"]}},
                       {"required": ["metrics"], "not": {"anyOf": [
                           {"required": ["metric"]}, {"required": ["mode"]}]}}]
    return schema


def _named_parts(schema: dict[str, Any], key: str, registry: Registry[Any]) -> list[Any]:
    """``key`` (``searcher``) made one of the names ``registry`` holds, and for each name a rule
    that its ``<key>_options`` follow the JSON Schema of that part's ``Options`` model."""
    names = registry.names()
    schema["properties"][key]["enum"] = names
    rules = []
    for name in names:
        options = registry.get(name).Options.model_json_schema(
            ref_template="#/$defs/{model}")
        schema.setdefault("$defs", {}).update(options.pop("$defs", {}))
        options["description"] = f"The options of {key} {name}: {registry.get(name).summary}."
        when: dict[str, Any] = {"properties": {key: {"const": name}}}
        if name != registry.default:  # a file that names none gets the default's rule
            when["required"] = [key]
        rules.append({"if": when, "then": {"properties": {f"{key}_options": options}}})
    return rules


def _tracking_section(schema: dict[str, Any]) -> None:
    """The ``tracking:`` section: a key per registered tracker, holding that tracker's
    ``Options`` (or ``true``/empty for its defaults, ``off`` to leave it out)."""
    properties = {}
    for name in TRACKERS.names():
        tracker = TRACKERS.get(name)
        options = tracker.Options.model_json_schema(ref_template="#/$defs/{model}")
        schema["$defs"].update(options.pop("$defs", {}))
        fields = ", ".join(options.get("properties", {}))
        properties[name] = {
            "oneOf": [options, {"type": ["boolean", "null"]}, {"enum": ["off"]}],
            "default": None, "title": name.capitalize(),
            "description": f"{tracker.summary[:1].upper()}{tracker.summary[1:]}: "
                           f"{{{fields}}}; `{{}}` for the defaults.",
        }
    schema["$defs"]["TrackingFile"] = {
        "additionalProperties": False, "properties": properties, "title": "TrackingFile",
        "type": "object", "description": "Experiment trackers the driver writes every trial "
        "to, as it runs (docs/tracking.md)."}
    schema["properties"]["tracking"] = {
        "$ref": "#/$defs/TrackingFile", "description": schema["properties"]["tracking"][
            "description"]}
