"""tools/pick_python.py: the interpreter `make` builds .venv from."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "pick_python.py"
_spec = importlib.util.spec_from_file_location("pick_python", SCRIPT)
assert _spec is not None and _spec.loader is not None
pick = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pick)


def test_the_fastest_interpreter_of_the_version_wins_and_others_are_skipped(
        tmp_path: Path) -> None:
    slow, fast, other = (tmp_path / name for name in ("slow", "fast", "other"))
    measured = {"slow": ("3.11", str(slow), 0.30), "fast": ("3.11", str(fast), 0.21),
                "other": ("3.12", str(other), 0.10), "broken": None}
    assert pick.fastest(measured, "3.11", measured.__getitem__) == os.path.realpath(fast)
    assert pick.fastest(["slow", "broken"], "3.11", measured.__getitem__) == os.path.realpath(slow)
    assert pick.fastest(["other", "broken"], "3.11", measured.__getitem__) is None


def test_two_names_of_one_interpreter_count_once_at_their_best_time(tmp_path: Path) -> None:
    real = tmp_path / "python3.11"
    real.touch()
    (tmp_path / "python3").symlink_to(real)
    other = tmp_path / "other"
    measured = {"a": ("3.11", str(tmp_path / "python3"), 0.40),
                "b": ("3.11", str(real), 0.20), "c": ("3.11", str(other), 0.25)}
    assert pick.fastest(measured, "3.11", measured.__getitem__) == os.path.realpath(real)


def test_candidates_are_the_executables_of_both_names_in_path_order(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
    for file in (first / "python3", second / "python3.11", second / "python3"):
        file.write_text("#!/bin/sh\n")
        file.chmod(0o755)
    (first / "python3.11").write_text("not executable")
    path = os.pathsep.join([str(first), "", str(tmp_path / "missing"), str(second)])
    assert pick.candidates(path, "3.11") == [
        str(first / "python3"), str(second / "python3"), str(second / "python3.11")]


def test_the_script_names_an_interpreter_of_its_own_version_that_can_make_a_venv() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          timeout=120, check=True)
    chosen = done.stdout.strip()
    version = subprocess.run(
        [chosen, "-c", "import ensurepip, sys, venv; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    assert version == "{}.{}".format(*sys.version_info[:2])
