"""Preflight on Ray: a misspelt metric, a NaN and a crash at import are caught in seconds
(one short task, not the study) with FILE:LINE messages; the sdk hook's overfit and initial-loss
checks; an objective calling ray.tune.report directly; ``run`` preflights by default (its
provenance and report carry the estimate) and ``--no-preflight`` skips it."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest

from searchsvc import usecases
from searchsvc.cli import main
from searchsvc.driver import RunOptions
from searchsvc.driver.preflight import PreflightError, PreflightResult, run_preflight
from searchsvc.provenance import objective_paths
from searchsvc.searchers import create_searcher
from searchsvc.store import open_store
from searchsvc.usecases import validate as validate_file

pytestmark = pytest.mark.slow


def preflight_file(path: Path) -> PreflightResult:
    """Preflight of the study file at ``path``, with the searcher its use case makes."""
    spec = validate_file(path)
    return run_preflight(spec, searcher=create_searcher(spec),
                         search_paths=objective_paths(spec.source.file))


STUDY = """\
study: {name}
objective: {module}:train
metric: {metric}
mode: min
searcher: random
budget: {{trials: 3, max_concurrent: 2, max_steps: 4}}
parameters:
  lr: {{role: nuisance, low: 0.01, high: 1.0, scale: log}}
"""

SIMPLE = '''
from searchsvc import sdk


def train(config):
    for step in range(1, 100):
        value = {value}
        sdk.report({{"val_loss": value, "train_loss": value * 2}})
'''


def write(tmp_path: Path, module: str, code: str, metric: str = "val_loss",
          name: str = "pf") -> Path:
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(code))
    study = tmp_path / f"{module}.yaml"
    study.write_text(STUDY.format(name=name, module=module, metric=metric))
    return study


def preflight_issues(path: Path) -> list[str]:
    result = preflight_file(path)
    return [i.render() for i in result.issues]


def test_misspelt_metric_nan_and_import_crash_are_caught_in_seconds(
        tmp_path: Path, ray_local) -> None:
    started = time.monotonic()
    spelt = write(tmp_path, "pf_spelling", SIMPLE.format(value="1.0 / step"), metric="val_los")
    assert preflight_issues(spelt) == [
        f"{spelt}:3: metric: the objective never reported 'val_los' (it reported: val_loss, "
        "train_loss); did you mean 'val_loss'?"]
    nan = write(tmp_path, "pf_nan",
                SIMPLE.format(value="float('nan') if step == 2 else 1.0 / step"))
    assert preflight_issues(nan) == [
        f"{nan}:3: metric: the objective reported val_loss=nan at step 2 (not finite)"]
    crash = write(tmp_path, "pf_import_crash", "import math\n\nRATE = 1 / 0\n\n\n"
                  "def train(config):\n    pass\n")
    assert preflight_issues(crash) == [
        f"{crash}:2: objective: the objective crashed when imported: ZeroDivisionError: "
        "division by zero (at pf_import_crash.py:3)"]
    # Three preflights, each one short task: nowhere near a study's time (loose bound).
    assert time.monotonic() - started < 120


HOOKED = '''
import math

from searchsvc import sdk


def train(config):
    weight = [5.0]

    def overfit_step():
        loss = {loss}
        weight[0] -= {lr} * 2 * weight[0]
        return loss

    sdk.preflight_checks(overfit_step=overfit_step, num_classes={classes})
    for step in range(1, 5):
        sdk.report({{"val_loss": 1.0 / step}})
'''


def test_overfit_and_initial_loss_checks(tmp_path: Path, ray_local) -> None:
    learnable = write(tmp_path, "pf_learnable", HOOKED.format(
        loss="weight[0] ** 2 * math.log(10) / 25", lr=0.1, classes=10))
    result = preflight_file(learnable)
    outcome = {c.name: c.ok for c in result.checks}
    assert result.ok and outcome["overfit_one_batch"] and outcome["initial_loss"]
    stuck = write(tmp_path, "pf_stuck", HOOKED.format(loss="weight[0] ** 2", lr=0.001,
                                                      classes=None))
    found = preflight_issues(stuck)
    assert len(found) == 1 and f"{stuck}:2: objective: the loss on one fixed batch did not " \
        "fall below 0.5x its start in 30 steps" in found[0]
    off = write(tmp_path, "pf_initial", HOOKED.format(loss="weight[0] ** 2", lr=0.1,
                                                      classes=10))
    found = preflight_issues(off)
    assert len(found) == 1 and "the first loss 25 is not near ln(10) = 2.303" in found[0]


def test_an_objective_reporting_through_ray_tune_directly(tmp_path: Path, ray_local) -> None:
    study = write(tmp_path, "pf_plain_tune", '''
        from ray import tune


        def train(config):
            for step in range(1, 100):
                tune.report({"val_loss": config["lr"] / step})
        ''')
    result = preflight_file(study)
    assert result.ok and len(result.probe.reports) == 3
    assert result.timing is not None and result.estimate is not None


def test_what_the_objective_writes_in_preflight_is_removed_after_it(tmp_path: Path,
                                                                     ray_local) -> None:
    # Each run of the probe writes an output into its trial folder, as a training script
    # saves a checkpoint, and notes where; preflight's scratch folders must not outlive it.
    study = write(tmp_path, "pf_writes", f'''
        from searchsvc import sdk


        def train(config):
            out = sdk.trial_dir() / "ckpt.pt"
            out.write_bytes(b"weights")
            with open({str(tmp_path / "written.txt")!r}, "a") as notes:
                notes.write(str(out) + "\\n")
            for step in range(1, 100):
                sdk.report({{"val_loss": config["lr"] / step}})
        ''')
    assert preflight_file(study).ok
    written = (tmp_path / "written.txt").read_text().split()
    assert written and all(Path(w).name == "ckpt.pt" for w in written)
    assert [w for w in written if Path(w).parent.exists()] == []


def test_run_preflights_by_default_and_no_preflight_skips_it(tmp_path: Path, ray_local,
                                                             capsys) -> None:
    study = write(tmp_path, "pf_run", SIMPLE.format(value="config['lr'] / step"))
    store = open_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    options = RunOptions(results_root=tmp_path / "results", live_progress=False)
    usecases.run(validate_file(study), store, options)
    preflight = store.get_study("pf").provenance["preflight"]
    estimate = preflight["estimate"]
    assert preflight["ok"] and estimate["trials"] == 3 and estimate["steps"] == 4
    assert estimate["concurrency"] == 2 and estimate["wall_s"] > 0
    report = json.loads((tmp_path / "results" / "pf" / "report.json").read_text())
    assert report["preflight"]["estimate"] == estimate
    assert any(line.startswith("Estimated cost:") for line in report["findings"])
    assert "Preflight" in (tmp_path / "results" / "pf" / "report.html").read_text()
    usecases.run(validate_file(study), store, options, overwrite=True, preflight=False)
    assert "preflight" not in store.get_study("pf").provenance
    # The CLI: a failed preflight is exit 2 with the FILE:LINE message, no traceback, and
    # no study created.
    bad = write(tmp_path, "pf_cli", SIMPLE.format(value="1.0"), metric="val_los", name="pf-cli")
    capsys.readouterr()
    assert main(["run", str(bad), "--storage", store.url]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3: metric: the objective never reported 'val_los'" in err
    assert "Traceback" not in err
    assert [s.name for s in store.list_studies()] == ["pf"]
    assert main(["preflight", str(study)]) == 0
    shown = capsys.readouterr().out
    assert "preflight ok   metric: reports 'val_loss'" in shown and "Estimated cost:" in shown


def test_a_study_that_never_started_is_preflighted_when_resumed(tmp_path: Path,
                                                                 ray_local) -> None:
    """How the service runs a submitted study: its driver resumes a created study, which is
    preflighted first; a failure marks the study failed with the result in its provenance."""
    store = open_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    options = RunOptions(results_root=tmp_path / "results", live_progress=False)
    good = write(tmp_path, "pf_resumed", SIMPLE.format(value="config['lr'] / step"),
                 name="pf-resumed")
    usecases.create(validate_file(good), store, options)
    usecases.resume("pf-resumed", store, options)
    done = store.get_study("pf-resumed")
    assert done.state == "completed" and done.provenance["preflight"]["ok"]
    bad = write(tmp_path, "pf_resumed_bad", SIMPLE.format(value="1.0"), metric="val_los",
                name="pf-resumed-bad")
    usecases.create(validate_file(bad), store, options)
    with pytest.raises(PreflightError, match="never reported 'val_los'"):
        usecases.resume("pf-resumed-bad", store, options)
    failed = store.get_study("pf-resumed-bad")
    assert failed.state == "failed" and not failed.provenance["preflight"]["ok"]
    assert not store.get_trials("pf-resumed-bad")


LOADERS = '''
import time

import torch
from torch.utils.data import DataLoader, Dataset

from searchsvc import sdk


SAMPLE = torch.ones(8), torch.tensor(0.0)


class Planted(Dataset):
    """{per_sample} s to read each sample (a slow disk or decoder), or no time at all: not
    even a sleep(0), which on a loaded machine yields the CPU to every other process first."""

    def __len__(self):
        return 4096

    def __getitem__(self, i):
        if {per_sample}:
            time.sleep({per_sample})
        return SAMPLE


def train(config):
    model = torch.nn.Linear(8, 1)
    loader = sdk.data_loader(DataLoader(Planted(), batch_size=32, shuffle=True))
    for step, (x, y) in enumerate(loader, 1):
        loss = ((model(x).squeeze(1) - y) ** 2).mean()
        loss.backward()
        time.sleep({step_s})  # the training step's own work
        sdk.report({{"val_loss": float(loss)}}, samples=len(x))
'''


def test_a_slow_loader_is_named_input_bound_before_the_study_starts(
        tmp_path: Path, ray_local) -> None:
    # 10 ms a sample delivers at most 100 samples/s; the step takes 32 samples in 10 ms. The
    # wait is planted 32x the step, not a few times: on a loaded machine a step's forward,
    # backward and sleep have been measured at 86 ms, and two batches are all preflight times.
    slow = preflight_file(write(
        tmp_path, "slowload", LOADERS.format(per_sample=0.01, step_s=0.01)))
    [check] = [c for c in slow.checks if c.name == "input_pipeline"]
    assert check.ok is False and check.detail.startswith("input-bound: the loader delivered ")
    read = float(check.detail.split("delivered ")[1].split(" samples/s")[0].replace(",", ""))
    consumed = float(check.detail.split("consumes ")[1].split(" samples/s")[0].replace(",", ""))
    assert read < 100 and consumed > read  # the measured numbers, not a verdict alone
    assert not slow.issues  # a warning: the study may still run
    assert any(line.startswith("Preflight warning: input-bound") for line in slow.lines())
    # The same model with a loader that keeps up (no read time): no warning.
    fast = preflight_file(write(
        tmp_path, "fastload", LOADERS.format(per_sample=0.0, step_s=0.01), name="pf2"))
    [check] = [c for c in fast.checks if c.name == "input_pipeline"]
    assert check.ok is True, check.detail


IMAGES = """\
study: {name}
objective: objectives.{module}:train
metric: val_error
mode: min
searcher: random
budget: {{trials: 2, max_steps: 2}}
parameters:
  learning_rate: {{role: nuisance, low: 0.05, high: 0.2, scale: log}}
  dataset_size: {{role: fixed, value: 512}}
  image_size: {{role: fixed, value: 16}}
  width: {{role: fixed, value: 2}}
  depth: {{role: fixed, value: 1}}
  batch_size: {{role: fixed, value: 32}}
  steps_per_epoch: {{role: fixed, value: 8}}
  workers: {{role: fixed, value: 0}}
  # Drawn at 16x the side and resized: on a CPU, where the model's step is as slow as a
  # sample's generation, decoding is made dearer so the planted study is input-bound here
  # as it is on a GPU.
  decode_scale: {{role: fixed, value: 16}}
"""


def test_the_input_check_rates_both_image_objectives(tmp_path: Path, ray_local) -> None:
    """The GPU-bound objective (data in memory, augmented per batch) keeps up; the per-sample
    generator behind a DataLoader, hidden in a generator, is named input-bound: both with the
    loader's and the step's rates, from the batches drawn through sdk.data_loader."""
    checks = {}
    for module in ("resnet_images", "resnet_input_bound"):
        study = tmp_path / f"{module}.yaml"
        study.write_text(IMAGES.format(name=module.replace("_", "-"), module=module))
        result = preflight_file(study)
        [checks[module]] = [c for c in result.checks if c.name == "input_pipeline"]
    for check in checks.values():
        assert "the loader delivered " in check.detail and " samples/s" in check.detail
        assert "the training step alone consumes " in check.detail
    assert checks["resnet_images"].ok is True, checks["resnet_images"].detail
    assert checks["resnet_input_bound"].ok is False, checks["resnet_input_bound"].detail
    assert checks["resnet_input_bound"].detail.startswith("input-bound: ")
