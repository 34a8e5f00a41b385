"""The ``autokeras`` backend: an AutoKeras search (structured-data classifier or regressor,
image classifier, or an ``AutoModel`` graph) run as one job with AutoKeras's own tuner. Each
AutoKeras trial is handed to a ``sink`` as it ends (its architecture and hyperparameter
choices, every epoch's metrics, its status), and the best model is exported. AutoKeras,
KerasTuner and TensorFlow are imported only here, lazily; no Ray either (the runner runs
:func:`search` in a Ray task)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from searchsvc.backends.base import Backend, SearchedTrial
from searchsvc.errors import ObjectiveError, SpecIssue
from searchsvc.plugins import SEARCHERS
from searchsvc.spec import StudySpec

TASKS = ("structured_data_classifier", "structured_data_regressor", "image_classifier",
         "auto_model")


class AutoKerasOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task: Literal["structured_data_classifier", "structured_data_regressor",
                  "image_classifier", "auto_model"] = Field(description=(
                      "what AutoKeras searches; auto_model: the objective returns the graph"))
    tuner: Literal["greedy", "bayesian", "hyperband", "random"] = "greedy"
    target: str | None = Field(default=None, description=(
        "the label column when the objective returns a CSV path"))
    validation_split: float = Field(default=0.2, gt=0, lt=1)
    batch_size: int | None = Field(default=None, ge=1)


AutoKerasTrial = SearchedTrial  # the name earlier versions used


class AutoKerasBackend(Backend):
    name = "autokeras"
    summary = ("an AutoKeras search (structured data, images, or an AutoModel graph) with "
               "AutoKeras's own tuner; every AutoKeras trial stored")
    Options = AutoKerasOptions
    runs_own_search = True
    own_space = True  # AutoKeras searches its own space
    no_dimensionality_because = "Keras models have no such hook"

    @classmethod
    def check(cls, spec: StudySpec) -> list[SpecIssue]:
        issues = []
        if spec.searcher != SEARCHERS.default_name():  # a searcher was named
            issues.append(spec.source.issue(
                ("searcher",), "backend autokeras searches with AutoKeras's own tuner: leave "
                "searcher out and set backend_options.tuner (greedy | bayesian | hyperband | "
                "random)", spec.searcher))
        if spec.budget.max_steps is None:
            issues.append(spec.source.issue(("budget", "max_steps"), "backend autokeras needs "
                                            "budget.max_steps (the epochs of each trial)"))
        return issues

    def run(self, config: dict[str, Any]) -> None:
        raise ObjectiveError("an autokeras study runs as one search job, not trial by trial")

    @classmethod
    def own_search(cls, objective: Callable[[], Any], options: Mapping[str, Any], *,
                   metric: str, max_trials: int, epochs: int, seed: int, directory: Path,
                   resume: bool, sink: Callable[[SearchedTrial], None]) -> Path:
        return search(objective, options, metric=metric, max_trials=max_trials, epochs=epochs,
                      seed=seed, directory=directory, resume=resume, sink=sink)


def search(objective: Callable[[], Any], options: Mapping[str, Any], *, metric: str,
           max_trials: int, epochs: int, seed: int, directory: Path, resume: bool,
           sink: Callable[[SearchedTrial], None]) -> Path:
    """Run the AutoKeras search; hand every trial to ``sink`` as it ends; export the best
    model to ``directory / "best_model.keras"`` and return that path."""
    import autokeras as ak
    import keras

    opts = AutoKerasOptions.model_validate(dict(options))
    # KerasTuner's seed only drives the choice of hyperparameters; the weights need their own
    keras.utils.set_random_seed(seed)
    data = objective()
    x, y, fit_extra, graph = _task_data(opts, data)
    common = {"max_trials": max_trials, "directory": str(directory), "project_name": "search",
              "tuner": opts.tuner, "objective": metric, "overwrite": not resume,
              "seed": 1 + seed % (2**31 - 2)}  # KerasTuner reads seed 0 as "unseeded"
    if opts.task == "auto_model":
        model = ak.AutoModel(inputs=graph["inputs"], outputs=graph["outputs"], **common)
    else:
        cls = {"structured_data_classifier": ak.StructuredDataClassifier,
               "structured_data_regressor": ak.StructuredDataRegressor,
               "image_classifier": ak.ImageClassifier}[opts.task]
        model = cls(**common)
    _record_trials(model.tuner, sink)
    fit = {"epochs": epochs, "verbose": 0, **fit_extra}
    if "validation_data" not in fit:
        fit["validation_split"] = opts.validation_split
    if opts.batch_size:
        fit["batch_size"] = opts.batch_size
    model.fit(x, y, **fit)
    path = directory / "best_model.keras"
    model.export_model().save(path)
    return path


def _task_data(opts: AutoKerasOptions, data: Any) -> tuple[Any, Any, dict[str, Any], Any]:
    """(x, y, extra fit() arguments, graph) from what the objective returned: a CSV path (with
    ``target``), an .npz path with x and y, a tuple (x, y[, x_val, y_val]) or, for auto_model,
    a dict with inputs, outputs, x, y (and optionally validation_data)."""
    import numpy as np

    if opts.task == "auto_model":
        if not isinstance(data, Mapping) or not {"inputs", "outputs", "x", "y"} <= set(data):
            raise ObjectiveError("an auto_model objective must return a dict with inputs, "
                                 "outputs, x and y")
        extra = {"validation_data": data["validation_data"]} if "validation_data" in data else {}
        return data["x"], data["y"], extra, data
    if isinstance(data, str | Path) and str(data).endswith(".csv"):
        import pandas as pd

        if not opts.target:
            raise ObjectiveError("the objective returned a CSV path: set backend_options.target "
                                 "to its label column")
        frame = pd.read_csv(data)
        if opts.target not in frame:
            raise ObjectiveError(f"backend_options.target {opts.target!r} is not a column of "
                                 f"{data} (columns: {', '.join(frame.columns)})")
        y = frame.pop(opts.target).to_numpy()
        return frame.to_numpy("float32"), y, {}, None  # AutoKeras 3 takes NumPy arrays only
    if isinstance(data, str | Path) and str(data).endswith(".npz"):
        arrays = np.load(data)
        return arrays["x"], arrays["y"], {}, None
    if isinstance(data, tuple | list) and len(data) in (2, 4):
        extra = {"validation_data": (data[2], data[3])} if len(data) == 4 else {}
        return data[0], data[1], extra, None
    raise ObjectiveError(f"an autokeras objective must return a CSV or .npz path, or (x, y[, "
                         f"x_val, y_val]) (got {type(data).__name__})")


def _record_trials(tuner: Any, sink: Callable[[SearchedTrial], None]) -> None:
    """Hook the tuner: KerasTuner keeps only each trial's best epoch, so every epoch's logs are
    collected on the way, and the trial is handed on when it ends."""
    epochs: dict[str, list[dict[str, float]]] = {}
    on_epoch_end, on_trial_end = tuner.on_epoch_end, tuner.on_trial_end

    def epoch_end(trial: Any, model: Any, epoch: int, logs: dict | None = None) -> Any:
        epochs.setdefault(trial.trial_id, []).append(
            {k: float(v) for k, v in (logs or {}).items() if _is_number(v)})
        return on_epoch_end(trial, model, epoch, logs=logs)

    def trial_end(trial: Any) -> Any:
        result = on_trial_end(trial)
        status = str(getattr(trial.status, "value", trial.status))
        sink(AutoKerasTrial(
            number=int(trial.trial_id),
            config={k: _plain(v) for k, v in trial.hyperparameters.values.items()},
            epochs=epochs.pop(trial.trial_id, []), completed=status == "COMPLETED",
            error=None if status == "COMPLETED" else (trial.message or f"trial {status}")))
        return result

    tuner.on_epoch_end, tuner.on_trial_end = epoch_end, trial_end


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value
