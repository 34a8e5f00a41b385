"""The rules of a command objective (a training script run as it is, ``python train.py``): how
a trial's config becomes the script's command line, and how the script's output becomes
reported metrics. Pure: the study file's checks and the worker that runs the script share
them, so what ``validate`` accepts is what a trial runs.

**Arguments.** Each parameter of the trial's config (conditional ones only when active) is
passed in the style the script takes (:data:`ArgStyle`): ``equals`` ``--name=value``
(argparse, the default), ``space`` ``--name value``, ``hydra`` ``name=value`` overrides
(``a__b`` becomes the dotted ``a.b``), or ``none``. ``names`` renames a parameter on the
command line (``batch_size: batch-size``, ``width: model.width``). A boolean is a flag in the
argparse styles (``--name`` when true, nothing when false) unless ``booleans: value``.
Placeholders in the command (``{lr}``, ``{trial_dir}``) put values anywhere; a parameter placed
by a placeholder is not passed again.

**Metrics.** A line of the script's output is a report when it carries the study's metric:
``name=value`` pairs (``epoch=3 val_loss=0.41``, commas or spaces between), a JSON object, or
a match of the study file's regular expression (named groups).
"""

from __future__ import annotations

import json
import re
import shlex
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

# What a study file's ``objective: {command: ...}`` becomes as its objective: nothing a worker
# imports (the backend that ``runs_commands`` runs the script itself).
COMMAND_OBJECTIVE = "searchsvc.backends.command:script"
ArgStyle = Literal["equals", "space", "hydra", "none"]
# What a placeholder may name besides the parameters: the trial's own values, which the
# script also finds in its environment (``SEARCHSVC_<NAME>``).
BUILTINS = ("trial", "seed", "trial_dir", "checkpoint_dir", "max_steps")
REPORT_PREFIX = "@searchsvc-report "  # a line sdk.report writes from inside a command
REPORT_VARIABLE = "SEARCHSVC_REPORT"  # "output" in a command's environment: sdk.report prints


def command_words(command: str) -> list[str]:
    """The command as its words, split as a POSIX shell would (no shell runs)."""
    return shlex.split(command)


def placeholders(words: Sequence[str]) -> list[str]:
    """The names the command's ``{name}`` placeholders use, in order (``{{`` is a brace)."""
    found: list[str] = []
    for word in words:
        for _, field, _, _ in string.Formatter().parse(word):
            if field is not None and field not in found:
                found.append(field)
    return found


def unknown_placeholders(words: Sequence[str], parameters: Iterable[str]) -> list[str]:
    """The placeholders that name neither a parameter nor a built-in (:data:`BUILTINS`)."""
    known = set(parameters) | set(BUILTINS)
    return [name for name in placeholders(words) if name not in known]


def script_of(words: Sequence[str]) -> str | None:
    """The script a command runs, to check that it exists: the first word ending in ``.py``
    or ``.sh``, else the program itself when it is a relative path (``./train``); None for a
    program found on PATH (``python -m pkg``, ``torchrun``)."""
    for word in words:
        if word.endswith((".py", ".sh")) and "{" not in word:
            return word
    program = words[0] if words else ""
    return program if "/" in program and not program.startswith("/") else None


PYTHONS = ("python", "python3")  # what a command's first word may be to mean the workers' Python


def outside_words(words: Sequence[str]) -> list[str]:
    """The words of a command that name something outside the folder it runs in, other than
    the workers' Python: an absolute path, a path through ``..``, or a program found on PATH.
    A command of uploaded code runs only what was uploaded."""
    found = [] if not words or words[0] in PYTHONS or "/" in words[0] else [words[0]]
    for word in words:
        value = word.split("=", 1)[-1]
        if value.startswith(("/", "~")) or ".." in value.split("/"):
            found.append(word)
    return found


def format_value(value: Any) -> str:
    """A parameter's value as one command-line word: numbers in full precision, booleans as
    ``true``/``false`` (Hydra, YAML) and lists as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return str(value)


def command_line(words: Sequence[str], config: Mapping[str, Any], values: Mapping[str, Any],
                 *, style: ArgStyle = "equals", names: Mapping[str, str] | None = None,
                 booleans: Literal["flag", "value"] = "flag") -> list[str]:
    """The argv of one trial: ``words`` with their placeholders filled from ``config`` and the
    built-in ``values``, then every other parameter of ``config`` in ``style``."""
    names = names or {}
    fill = {**{k: format_value(v) for k, v in config.items()},
            **{k: str(v) for k, v in values.items()}}
    placed = set(placeholders(words))
    argv = [word.format_map(fill) for word in words]
    for name, value in config.items():
        if name in placed:
            continue
        argv += _argument(names.get(name, name), value, style, booleans)
    return argv


def _argument(name: str, value: Any, style: ArgStyle, booleans: str) -> list[str]:
    if style == "none":
        return []
    if style == "hydra":
        return [f"{name.replace('__', '.')}={format_value(value)}"]
    if isinstance(value, bool) and booleans == "flag":
        return [f"--{name}"] if value else []
    if style == "space":
        return [f"--{name}", format_value(value)]
    return [f"--{name}={format_value(value)}"]


_PAIR = re.compile(r"([A-Za-z_][\w./-]*)\s*[=:]\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
                   r"|[-+]?(?:nan|inf|infinity)\b)", re.IGNORECASE)


WANDB_METRICS = "wandb"  # a study's ``metrics: wandb``: reports are the script's wandb.log calls


def parse_metrics(line: str, metrics: Sequence[str], pattern: re.Pattern[str] | None = None,
                  *, reports_only: bool = False) -> dict[str, float] | None:
    """The metrics one line of output reports, or None when it reports none of ``metrics``
    (the study's): a line from ``sdk.report`` (or a hooked ``wandb.log``) inside the script,
    and unless ``reports_only``, a JSON object, ``pattern``'s named groups when given, else
    every ``name=value`` (or ``name: value``) pair with a number."""
    text = line.strip()
    if text.startswith(REPORT_PREFIX):
        found = _numbers(json.loads(text[len(REPORT_PREFIX):]))
    elif reports_only:
        return None
    elif pattern is not None:
        match = pattern.search(text)
        found = _numbers(match.groupdict()) if match else {}
    elif text.startswith("{"):
        try:
            found = _numbers(json.loads(text))
        except (ValueError, AttributeError):
            found = {}
    else:
        found = {name: float(value) for name, value in _PAIR.findall(text)}
    return found if any(m in found for m in metrics) else None


def _numbers(data: Mapping[str, Any]) -> dict[str, float]:
    """The entries of ``data`` that are numbers (or numeric text), as floats."""
    out: dict[str, float] = {}
    for name, value in data.items():
        if isinstance(value, bool) or value is None:
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        out[str(name)] = number
    return out
