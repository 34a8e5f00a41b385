"""A command objective in a study file: `objective: {command: ...}` is checked where it is
written (file:line, the field, the value) — a script that is not there, a placeholder that
names nothing, options of the wrong kind — and a good one becomes the command backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.cli import main
from searchsvc.spec import load_spec

STUDY = """\
study: cmd
objective:
  command: {command}
{extra}metric: val_loss
mode: min
parameters:
  lr: {{low: 0.001, high: 0.1, scale: log}}
"""


def study(folder: Path, command: str, extra: str = "") -> Path:
    (folder / "train.py").write_text("print('val_loss=1')\n")
    path = folder / "study.yaml"
    path.write_text(STUDY.format(command=command, extra=extra))
    return path


def validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["validate", str(path)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_good_command_becomes_the_command_backend_with_its_options(tmp_path: Path) -> None:
    spec = load_spec(study(tmp_path, '"python train.py --lr {lr}"',
                           "  args: hydra\n  stop_grace_s: 3\n"))
    assert spec.backend == "command"
    assert dict(spec.backend_options) == {"command": "python train.py --lr {lr}",
                                          "args": "hydra", "stop_grace_s": 3}


@pytest.mark.parametrize(("command", "extra", "expected"), [
    ('"python missing.py"', "", "study.yaml:3: objective.command: the script 'missing.py' is "
     "not beside the study file"),
    ('"python train.py --out {outdir}"', "", "study.yaml:3: objective.command: unknown "
     "placeholder {outdir}: expected a parameter or one of trial, seed, trial_dir"),
    ('"python \'train.py"', "", "study.yaml:3: objective.command: cannot be split into words"),
    ('"python train.py"', "  args: argparse\n", "study.yaml:4: objective.args: must be "),
    ('"python train.py"', "  metrics: 'loss=([0-9.]+)'\n", "study.yaml:4: objective.metrics: "
     "needs named groups"),
])
def test_a_bad_command_objective_is_refused_where_it_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, extra: str,
        expected: str) -> None:
    code, said = validate(study(tmp_path, command, extra), capsys)
    assert code != 0
    assert expected in said.replace(str(tmp_path) + "/", ""), said


def test_a_command_objective_with_another_backend_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = study(tmp_path, '"python train.py"')
    path.write_text(path.read_text() + "backend: keras_tuner\n")
    code, said = validate(path, capsys)
    assert code != 0 and "a command objective runs with backend 'command'" in said
