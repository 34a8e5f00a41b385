"""A user's own training script, in its own folder, reading its data by a relative path, run
the ways a user runs it (real Ray): the command line from its folder and from a parent
folder, and Python; its trials write to their own folder through ``sdk.trial_dir()``. An
objective that fails for every config but the centre passes preflight and is stopped by fail
fast after 3 trials, exit 1, then resumes once fixed. A module named like an optional package
is named by preflight. (Through the service, with uploaded code on a cluster:
tests/service/test_code_bundles.py.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import searchsvc
from searchsvc.cli import main
from searchsvc.core import TrialState
from searchsvc.store import open_store

pytestmark = pytest.mark.slow

TRAIN = '''
import numpy as np

from searchsvc import sdk


def train(config):
    points = np.loadtxt("data/points.csv")  # relative to the folder the study runs in
    (sdk.trial_dir() / "fit.txt").write_text(f"{config['x']}")
    for step in range(sdk.max_steps(2)):
        sdk.report({"loss": abs(config["x"] - points.sum()) + 1.0 / (step + 1)})
'''
STUDY = """\
study: {name}
objective: {module}:train
metric: loss
mode: min
searcher: random
seed: 3
noise: off
budget: {{trials: {trials}, max_concurrent: {concurrent}, max_steps: 2}}
parameters:
  x: {{role: nuisance, low: 0, high: 10}}
"""


def users_folder(root: Path, module: str, name: str, trials: int = 3, concurrent: int = 2,
                 code: str = TRAIN) -> Path:
    """``root`` holding ``module``.py, its ``data/points.csv`` and ``study.yaml``."""
    (root / "data").mkdir(parents=True)
    (root / "data" / "points.csv").write_text("1\n2\n3\n")
    (root / f"{module}.py").write_text(textwrap.dedent(code))
    (root / "study.yaml").write_text(STUDY.format(name=name, module=module, trials=trials,
                                                  concurrent=concurrent))
    return root


def completed_with_files(url: str, name: str) -> None:
    store = open_store(url)
    study = store.get_study(name)
    trials = store.get_trials(name)
    assert study.state == "completed", (study.state, [t.error for t in trials])
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 3
    latest = max(Path(study.results_dir or "").glob("ray/run-*"))  # this run's Tune folder
    written = sorted(latest.glob("trial_*/fit.txt"))
    assert [p.read_text() for p in written] == [str(t.config["x"]) for t in trials]


def test_a_users_folder_runs_from_its_folder_a_parent_folder_and_python(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_local) -> None:
    folder = users_folder(tmp_path / "project" / "sub", "uf_train", "uf")
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    monkeypatch.chdir(folder)
    assert main(["run", "study.yaml", "--storage", url]) == 0
    completed_with_files(url, "uf")

    monkeypatch.chdir(tmp_path / "project")  # the module (and its data) beside the study file
    assert main(["run", "sub/study.yaml", "--storage", url, "--overwrite"]) == 0
    completed_with_files(url, "uf")

    study = searchsvc.run(Path("sub/study.yaml"), storage=url, overwrite=True)
    assert study.record.state == "completed"
    completed_with_files(url, "uf")


FAILS_BUT_AT_THE_CENTRE = '''
import numpy as np

from searchsvc import sdk


def train(config):
    if config["x"] != 5.0:  # preflight runs the centre of the space, which works
        np.loadtxt(f"data/points-{config['x']:.4f}.csv")
    for step in range(sdk.max_steps(2)):
        sdk.report({"loss": abs(config["x"] - 4.0) + 1.0 / (step + 1)})
'''


def test_a_study_whose_first_trials_fail_alike_stops_after_three_and_resumes_once_fixed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        ray_local) -> None:
    folder = users_folder(tmp_path / "ff", "ff_train", "ff", trials=8, concurrent=1,
                          code=FAILS_BUT_AT_THE_CENTRE)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    monkeypatch.chdir(folder)
    assert main(["run", "study.yaml", "--storage", url]) == 1
    said = capsys.readouterr().out
    assert ("study ff: failed — 3/8 trials finished (the first 3 trials all failed with "
            "FileNotFoundError at ff_train.py:9: data/points-") in said
    assert "once fixed, continue it with: searchsvc resume ff" in said
    store = open_store(url)
    assert [t.state for t in store.get_trials("ff")] == [TrialState.FAILED] * 3

    # the fix (a different size, so no stale bytecode is taken for it)
    (folder / "ff_train.py").write_text(textwrap.dedent(
        FAILS_BUT_AT_THE_CENTRE).replace('if config["x"] != 5.0:', "if False:  # fixed"))
    assert main(["resume", "ff", "--storage", url]) == 0
    trials = store.get_trials("ff")
    assert store.get_study("ff").state == "completed"
    assert [t.state for t in trials] == [TrialState.FAILED] * 3 + [TrialState.COMPLETED] * 5


def test_preflight_names_a_module_that_shadows_an_optional_package(tmp_path: Path) -> None:
    # A fresh process, as a user's: pandas probes for "bottleneck" as Ray Tune imports it.
    folder = users_folder(tmp_path / "bn", "bn_train", "bn", code="import bottleneck\n" + TRAIN)
    (folder / "bottleneck.py").write_text("def block(width):\n    return width // 4\n")
    command = [str(Path(sys.executable).with_name("searchsvc")), "preflight", "study.yaml",
               "--num-cpus", "1"]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=240)
    assert done.returncode == 2, done.stdout + done.stderr
    assert (f"{folder / 'bottleneck.py'} shadows the optional package 'bottleneck' (pandas, "
            "which Ray Tune imports, looks for it): rename it") in done.stdout + done.stderr
    assert "pip install" not in done.stdout
