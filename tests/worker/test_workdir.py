"""Where the objective runs, without Ray: preflight's probe runs it in the study's working
directory as a trial does (so a relative path that every trial would miss fails preflight,
with the user's line), and a module that shadows a package is named when an import fails."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from searchsvc.backends import backend_class
from searchsvc.errors import ObjectiveError
from searchsvc.worker.context import META_KEY
from searchsvc.worker.preflight import probe
from searchsvc.worker.shadowing import named_shadowing, shadowing
from searchsvc.worker.trainable import TrialSettings
from searchsvc.worker.workdir import working_directory

TRAIN = '''
from pathlib import Path

from searchsvc import sdk


def train(config):
    values = [float(v) for v in open("data/points.csv")]
    (sdk.trial_dir() / "seen.txt").write_text(str(Path.cwd()))
    for step in range(sdk.max_steps(2)):
        sdk.report({"loss": abs(config["x"] - sum(values)) + 1.0 / (step + 1)})
'''


def settings(module: str, folder: Path, workdir: Path) -> TrialSettings:
    return TrialSettings(study="wd", objective=f"{module}:train", search_paths=(str(folder),),
                         metric="loss", mode="min", max_steps=2, keep_checkpoints=False,
                         backend=backend_class("ray"), workdir=str(workdir))


def users_folder(root: Path, module: str, with_data: bool) -> Path:
    root.mkdir(parents=True)
    (root / f"{module}.py").write_text(textwrap.dedent(TRAIN))
    if with_data:
        (root / "data").mkdir()
        (root / "data" / "points.csv").write_text("1\n2\n")
    return root


def test_preflight_reads_the_launch_folder_not_where_its_process_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The probe's process starts in a folder that has the data; the study's working directory
    # has none, so every trial would fail: preflight must fail too, at the user's line.
    elsewhere = users_folder(tmp_path / "elsewhere", "wd_train_a", with_data=True)
    launch = users_folder(tmp_path / "launch", "wd_train_a_launch", with_data=False)
    monkeypatch.chdir(elsewhere)
    config = {"x": 1.0, META_KEY: {"number": 0, "seed": 0}}
    found = probe(config, settings("wd_train_a_launch", launch, launch), 2, time.time())
    assert found["reports"] == []
    assert found["crash"].startswith("FileNotFoundError: [Errno 2] No such file or directory: "
                                     "'data/points.csv' (at wd_train_a_launch.py:8)")
    assert f"the trial's working directory is {launch} on node" in found["crash"]
    assert Path.cwd() == elsewhere  # the process's own folder is given back


def test_with_its_data_the_probe_runs_there_and_writes_to_its_own_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    launch = users_folder(tmp_path / "launch", "wd_train_b", with_data=True)
    monkeypatch.chdir(tmp_path)
    config = {"x": 1.0, META_KEY: {"number": 0, "seed": 0}}
    found = probe(config, settings("wd_train_b", launch, launch), 2, time.time())
    assert found["crash"] is None and len(found["reports"]) == 2
    assert not (launch / "seen.txt").exists()  # sdk.trial_dir() is not the working directory


def test_a_launch_folder_missing_on_this_node_leaves_the_process_where_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with working_directory(str(tmp_path / "not-on-this-node")) as here:
        assert here == tmp_path and Path.cwd() == tmp_path
    with working_directory(None) as here:
        assert here == Path(os.getcwd())


def test_a_module_shadowing_an_optional_package_is_named(tmp_path: Path) -> None:
    (tmp_path / "bottleneck.py").write_text("import torch\n")
    (tmp_path / "my_layers.py").write_text("")
    failure = ImportError("Can't import ray.tune as some dependencies are missing. Run "
                          "`pip install \"ray[tune]\"` to fix.")
    failure.__cause__ = ImportError("Can't determine version for bottleneck")
    [said] = shadowing([str(tmp_path)], failure)
    assert said.startswith(f"{tmp_path / 'bottleneck.py'} shadows the optional package "
                           "'bottleneck'")
    assert said.endswith("rename it (and its imports)")
    assert shadowing([str(tmp_path)], ImportError("No module named 'yaml2'")) == []
    with (pytest.raises(ObjectiveError, match=r"bottleneck\.py shadows the optional package"),
          named_shadowing([str(tmp_path)])):
        raise failure


def test_a_module_named_like_the_standard_library_is_named_when_its_import_fails(
        tmp_path: Path) -> None:
    (tmp_path / "statistics.py").write_text("")
    [said] = shadowing([str(tmp_path)], ImportError(
        "cannot import name 'fmean' from 'statistics'"))
    assert "shadows the standard-library module 'statistics'" in said
