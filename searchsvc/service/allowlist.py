"""Which code a submitted study may make the service import: every importable reference in the
spec (found by walking the spec and the options models of its backend and searcher, see
:mod:`searchsvc.spec.references`) must lie under one of the server's allowed module prefixes,
or in the study's code bundle. Checked before anything is imported."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from searchsvc.codebundle import allowed_module, module_in_bundle
from searchsvc.core.commands import command_words, outside_words, script_of
from searchsvc.errors import SpecIssue
from searchsvc.searchers import searcher_class, searcher_names
from searchsvc.spec import StudySpec
from searchsvc.spec.references import Reference, references
from searchsvc.usecases import backend_names, backend_options, runs_command


def spec_references(spec: StudySpec) -> list[Reference]:
    """Every "module:callable" that running ``spec`` imports (spec must be valid)."""
    found = references(spec)
    backend = backend_options(spec.backend).model_validate(dict(spec.backend_options))
    searcher = searcher_class(spec.searcher).Options.model_validate(dict(spec.searcher_options))
    return [*found, *references(backend, ("backend_options",)),
            *references(searcher, ("searcher_options",))]


def option_models() -> dict[str, type]:
    """Every model a study's references can live in, by where it sits in the file."""
    models: dict[str, type] = {"": StudySpec}
    models.update({f"backend_options ({n})": backend_options(n) for n in backend_names()})
    models.update({f"searcher_options ({n})": searcher_class(n).Options
                   for n in searcher_names()})
    return models


def refused_references(spec: StudySpec, prefixes: Sequence[str],
                       bundle: Path | None = None) -> list[SpecIssue]:
    """One issue per reference neither allowed by ``prefixes`` nor a module of ``bundle``; a
    command objective's own stand-in is judged by :func:`refused_command` instead."""
    issues = []
    command = runs_command(spec)
    for ref in spec_references(spec):
        if allowed_module(ref.module, prefixes) or (command and ref.path == ("objective",)):
            continue
        if bundle is not None:
            if module_in_bundle(bundle, ref.module):
                continue
            reason = ("is not in the uploaded code and not under this server's allowed module "
                      f"prefixes ({', '.join(prefixes)})")
        else:
            reason = (f"is not allowed: this server imports only modules under the prefixes "
                      f"{', '.join(prefixes)} (serve --allow-objectives), or from code uploaded "
                      "with a token created with --allow-code (searchsvc submit --code DIR)")
        issues.append(spec.source.issue(ref.path, f"module {ref.module!r} {reason}", ref.value))
    return issues


def refused_command(spec: StudySpec, bundle: Path | None) -> list[SpecIssue]:
    """A command objective runs only a script of the study's uploaded code (which only a token
    made with ``--allow-code`` can upload), in it, and names nothing outside it but the
    workers' Python."""
    if not runs_command(spec):
        return []
    where = (("objective", "command") if spec.source.has(("objective", "command"))
             else ("backend_options", "command"))
    command = str(spec.backend_options.get("command", ""))
    if bundle is None:
        return [spec.source.issue(where, "a command runs a script of the study's uploaded "
                                  "code: submit the study from the script's folder (`searchsvc "
                                  "submit` uploads it) with a token created with --allow-code",
                                  command)]
    words = command_words(command)
    outside = outside_words(words)
    if outside:
        return [spec.source.issue(where, "a command of uploaded code may name only the "
                                  f"uploaded files and the workers' Python, not "
                                  f"{', '.join(outside)}", command)]
    script = script_of(words)
    if script is not None and not (bundle / script).is_file():
        return [spec.source.issue(where, f"the script {script!r} is not in the uploaded code",
                                  command)]
    return []


def refused_tracking(spec: StudySpec, allowed_uris: Sequence[str]) -> list[SpecIssue]:
    """A submitted study's trackers write where the server allows, and only there: TensorBoard
    inside the study's results folder (a relative ``dir`` without ``..``), MLflow to its
    default store there or to a tracking URI under one of ``allowed_uris`` (the driver would
    otherwise connect to any host, or write any path, the service's account can reach)."""
    issues = []
    tensorboard, mlflow = spec.tracking.tensorboard, spec.tracking.mlflow
    if tensorboard is not None and tensorboard.dir is not None:
        path = Path(tensorboard.dir)
        if path.is_absolute() or ".." in path.parts:
            issues.append(spec.source.issue(
                ("tracking", "tensorboard", "dir"), "a submitted study writes its event files "
                "inside its results folder: give a relative folder without '..'",
                tensorboard.dir))
    if mlflow is not None and mlflow.tracking_uri is not None and not any(
            mlflow.tracking_uri.startswith(prefix) for prefix in allowed_uris):
        allowed = ", ".join(allowed_uris) or "none; the default store in the results folder"
        issues.append(spec.source.issue(
            ("tracking", "mlflow", "tracking_uri"), f"this server does not send tracking "
            f"there (allowed: {allowed}; its admin sets `serve --allow-tracking-uri`)",
            mlflow.tracking_uri))
    return issues + _refused_wandb(spec, allowed_uris)


WANDB_DEFAULT_HOST = "https://api.wandb.ai"


def _refused_wandb(spec: StudySpec, allowed_uris: Sequence[str]) -> list[SpecIssue]:
    """W&B as MLflow: offline runs inside the study's results folder; online only when the
    server's W&B host (its ``WANDB_BASE_URL``, else W&B's own) is allowed."""
    wandb = spec.tracking.wandb
    if wandb is None:
        return []
    issues = []
    if wandb.dir is not None:
        path = Path(wandb.dir)
        if path.is_absolute() or ".." in path.parts:
            issues.append(spec.source.issue(
                ("tracking", "wandb", "dir"), "a submitted study writes its W&B runs inside "
                "its results folder: give a relative folder without '..'", wandb.dir))
    host = os.environ.get("WANDB_BASE_URL") or WANDB_DEFAULT_HOST
    if wandb.mode == "online" and not any(host.startswith(p) for p in allowed_uris):
        allowed = ", ".join(allowed_uris) or "none; offline runs in the results folder"
        issues.append(spec.source.issue(
            ("tracking", "wandb", "mode"), f"this server does not send runs to W&B at {host} "
            f"(allowed: {allowed}; its admin sets `serve --allow-tracking-uri`)", wandb.mode))
    return issues

