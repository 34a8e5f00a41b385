"""The ``command`` backend: a training script run as it is, one process per trial. A study file
names it as ``objective: {command: "python train.py"}``; the script gets the trial's parameters
on its command line (:mod:`searchsvc.core.commands`) and reports by printing its metrics; the
worker runs it (:mod:`searchsvc.worker.command`)."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from searchsvc.backends.base import Backend
from searchsvc.core.commands import (
    BUILTINS,
    WANDB_METRICS,
    command_line,
    command_words,
    script_of,
    unknown_placeholders,
)
from searchsvc.errors import ObjectiveError, SpecIssue
from searchsvc.spec import StudySpec
from searchsvc.spec.file_schema import CommandFile
from searchsvc.worker.command import (
    CHECKPOINT_FOLDER,
    report,
    resolve_program,
    restore_checkpoint,
    resumed_from,
    run_command,
    trial_environment,
    wandb_environment,
)
from searchsvc.worker.context import current


def script(config: dict[str, Any]) -> None:
    """What a command objective's ``objective`` names: the command backend runs the study's
    script itself, so nothing imports or calls this."""
    raise ObjectiveError("a command objective runs through the command backend "
                         "(objective: {command: ...}), not as a function")


class CommandBackend(Backend):
    name = "command"
    summary = "a training script run as it is: objective: {command: python train.py}"
    Options = CommandFile
    runs_commands = True
    no_dimensionality_because = "script runs in a process of its own, which sdk.watch cannot see"

    options: CommandFile

    @classmethod
    def check(cls, spec: StudySpec) -> list[SpecIssue]:
        """A placeholder must name a parameter or a trial's own value, and the script the
        command runs must exist beside the study file or in the folder it is run from."""
        try:
            options = CommandFile.model_validate(dict(spec.backend_options))
            words = command_words(options.command)
        except (ValidationError, ValueError):
            return []  # the options' own check says what is wrong with them
        where = (("objective", "command") if spec.source.has(("objective",))
                 else ("backend_options", "command"))
        issues = [spec.source.issue(where, f"unknown placeholder {{{name}}}: expected a "
                                    f"parameter or one of {', '.join(BUILTINS)}", name)
                  for name in unknown_placeholders(words, spec.parameters)]
        found = script_of(words)
        # A study file sent as text (to the service) has no folder: there the script is looked
        # for in the uploaded code instead.
        on_disk = not spec.source.file.startswith("<")
        if on_disk and found is not None and not _script_folder(found, _study_folders(spec)):
            issues.append(spec.source.issue(
                where, f"the script {found!r} is not beside the study file nor in the folder "
                f"it is run from ({', '.join(_study_folders(spec))})", found))
        return issues

    def objective(self) -> Any:
        return None  # nothing to import: the script runs in a process of its own

    def run(self, config: dict[str, Any]) -> None:
        context = current()
        trial_dir = Path(context.trial_dir or tempfile.mkdtemp(prefix="searchsvc-trial-"))
        checkpoint_dir = trial_dir / CHECKPOINT_FOLDER
        with resumed_from() as source:
            restore_checkpoint(source, checkpoint_dir)
        words = command_words(self.options.command)
        values = {"trial": context.number, "seed": context.seed, "trial_dir": trial_dir,
                  "checkpoint_dir": checkpoint_dir, "max_steps": context.max_steps or ""}
        argv = resolve_program(command_line(
            words, config, values, style=self.options.args, names=self.options.names,
            booleans=self.options.booleans))
        found = script_of(words)
        cwd = (_script_folder(found, [*self.search_paths, os.getcwd()]) if found else None
               ) or os.getcwd()
        env = {**os.environ, **trial_environment(
            number=context.number, seed=context.seed, max_steps=context.max_steps,
            trial_dir=trial_dir, checkpoint_dir=checkpoint_dir)}
        from_wandb = self.options.metrics == WANDB_METRICS
        if from_wandb:
            env.update(wandb_environment(trial_dir, config))
        pattern = (re.compile(self.options.metrics) if self.options.metrics and not from_wandb
                   else None)
        run_command(argv, cwd=cwd, env=env, trial_dir=trial_dir, checkpoint_dir=checkpoint_dir,
                    metrics=[self.metric], pattern=pattern, report=report,
                    stop_grace_s=float(self.options.stop_grace_s), reports_only=from_wandb)


def _study_folders(spec: StudySpec) -> list[str]:
    from searchsvc.provenance import objective_paths

    return list(objective_paths(spec.source.file))


def _script_folder(script: str, folders: Sequence[str]) -> str | None:
    """The first of ``folders`` that holds ``script`` (its own folder when absolute): where
    the command runs, as an objective's module decides its trials' working directory."""
    if os.path.isabs(script):
        return os.path.dirname(script) if os.path.isfile(script) else None
    return next((f for f in folders if os.path.isfile(os.path.join(f, script))), None)
