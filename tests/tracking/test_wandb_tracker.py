"""The W&B tracker with the real wandb library in offline mode, read back from the runs' own
``.wandb`` record logs (not from file names): a run per trial with its config, roles, every
step's metrics and telemetry and its end in the summary; a run for the study; a resume (W&B
cannot resume an offline run) writes no step twice across a trial's runs; a new attempt
replaces the earlier one's run; the study file's section and the service's rule."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from searchsvc.core import Measurement, StudyState, TrialState
from searchsvc.errors import SpecError
from searchsvc.service.allowlist import refused_tracking
from searchsvc.spec import parse_spec
from searchsvc.tracking import ReportFolder, open_trackers
from searchsvc.tracking.wandb_records import RunFile, read_run, run_files
from searchsvc.tracking.wandb_tracker import WandbTracker
from tests.tracking.records import (
    SPEC,
    STEPS,
    finished,
    loss,
    measurement,
    run_trial,
    spec,
    study,
    trial,
)


def tracker(folder: Path) -> WandbTracker:
    return WandbTracker(folder, project="proj", group="tracked-group")


def ended_runs(folder: Path, count: int) -> list[RunFile]:
    """The runs under ``folder`` once ``count`` of them are on disk with their end: W&B's
    writer flushes a run's file shortly after ``finish()`` returns."""
    deadline = time.monotonic() + 30
    while len(runs := [r for r in run_files(folder) if r.exit_code is not None]) < count:
        assert time.monotonic() < deadline, [(r.path, r.config, r.exit_code) for r in runs]
        time.sleep(0.1)
    return runs


def trial_runs(folder: Path) -> dict[int, list[RunFile]]:
    """The trial runs W&B has written (a run still open may not have its config on disk yet:
    the trials read here have ended)."""
    found: dict[int, list[RunFile]] = {}
    for run in run_files(folder):
        meta = run.config.get("searchsvc") or {}
        if meta.get("kind") == "trial":
            found.setdefault(meta["trial_number"], []).append(run)
    return found


def study_runs(folder: Path) -> list[RunFile]:
    return [r for r in run_files(folder)
            if (r.config.get("searchsvc") or {}).get("kind") == "study"]


def losses(runs: list[RunFile]) -> list[tuple[int, float]]:
    """Every (step, loss) the trial's runs hold, in the order written."""
    return [(int(row["_step"]), row["loss"]) for r in runs for row in r.history if "loss" in row]


def with_telemetry(m: Measurement) -> Measurement:
    return replace(m, telemetry={"step_time_s": 0.5, "rss_mb": 300.0, "gpu": "none assigned",
                                 "ranks": [{"rank": 0, "step_time_s": 0.5},
                                           {"rank": 1, "step_time_s": 0.7}]})


def test_a_run_per_trial_with_config_roles_steps_telemetry_and_its_end(tmp_path: Path) -> None:
    wandb_tracker = tracker(tmp_path)
    wandb_tracker.study_started(study(), spec(), [])
    run_trial(wandb_tracker, 0)
    record = trial(1)
    wandb_tracker.trial_started(record)
    wandb_tracker.measurements(record, [with_telemetry(measurement(1, 1))])
    failed = replace(record, state=TrialState.FAILED, error="it broke",
                     finished_at=record.started_at, final_metrics={"loss": loss(1, 1)})
    wandb_tracker.trial_finished(failed)
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.json").write_text("{}")
    wandb_tracker.study_finished(finished(), ReportFolder(report, (report / "report.json",)))
    wandb_tracker.close()

    ended_runs(tmp_path, 3)  # the study's and two trials'
    runs = trial_runs(tmp_path)
    assert sorted(runs) == [0, 1] and all(len(r) == 1 for r in runs.values())
    [first], [second] = runs[0], runs[1]
    assert first.name == "trial 0" and first.group == "tracked-group"
    assert {k: first.config[k] for k in ("depth", "lr", "units", "act", "batch")} == \
        trial(0).config
    meta = first.config["searchsvc"]
    assert meta["roles"] == {"depth": "scientific", "lr": "nuisance", "units": "nuisance",
                             "act": "nuisance", "batch": "fixed"}
    assert (meta["trial_number"], meta["attempt"], meta["seed"]) == (0, 1, 1000)
    assert losses([first]) == [(s, pytest.approx(loss(0, s))) for s in range(1, STEPS + 1)]
    assert "phase" not in first.history[0] and "done" not in first.history[0]  # not numbers
    assert first.exit_code == 0 and first.summary["state"] == "completed"
    # Telemetry under system/, a data-parallel trial's other ranks apart.
    [row] = second.history
    assert row["system/step_time_s"] == 0.5 and row["system/rss_mb"] == 300.0
    assert row["system/rank1/step_time_s"] == 0.7 and "system/gpu" not in row
    assert second.exit_code == 1 and second.summary["state"] == "failed"
    assert second.summary["error"] == "it broke" and second.summary["final/loss"] == \
        pytest.approx(loss(1, 1))
    [study_run] = study_runs(tmp_path)
    assert study_run.name == "tracked" and study_run.exit_code == 0
    assert study_run.config["metric"] == "loss" and study_run.summary["trials_completed"] == 3
    assert study_run.summary["best_loss"] == pytest.approx(loss(2, STEPS))
    saved = study_run.path.parent / "files" / "report.json"
    assert json.loads(saved.read_text()) == {}


def test_a_resume_writes_no_step_twice_across_a_trials_runs(tmp_path: Path) -> None:
    first = tracker(tmp_path)
    first.study_started(study(), spec(), [])
    done = run_trial(first, 0)
    # Trial 1 reaches W&B with 2 steps; the store got a third before the driver was killed.
    first.trial_started(trial(1))
    first.measurements(trial(1), [measurement(1, 1), measurement(1, 2)])
    first.close()
    ended_runs(tmp_path, 3)  # trial 0's, trial 1's (closed unfinished) and the study's

    stored = [done, trial(1, state=TrialState.INTERRUPTED, steps=3)]
    second = tracker(tmp_path)
    second.study_started(study(), spec(), stored)
    ended_runs(tmp_path, 4)  # and trial 1's second run, ended with the trial
    runs = trial_runs(tmp_path)
    assert len(runs[0]) == 1  # complete: nothing new
    assert [r.steps for r in runs[1]] == [[1, 2], [3]]  # a second run, from step 3 on
    assert losses(runs[1]) == [(s, pytest.approx(loss(1, s))) for s in (1, 2, 3)]

    # Trial 1 runs again as attempt 2: it replaces attempt 1's runs, deleted from disk.
    run_trial(second, 1, attempt=2)
    second.study_finished(replace(finished(), state=StudyState.INTERRUPTED), None)
    second.close()
    ended_runs(tmp_path, 4)  # trial 0's, trial 1's rerun and the two study runs
    runs = trial_runs(tmp_path)
    [rerun] = runs[1]
    assert rerun.config["searchsvc"]["attempt"] == 2 and rerun.steps == list(range(1, STEPS + 1))
    assert len(runs[0]) == 1 and runs[0][0].steps == list(range(1, STEPS + 1))


def test_a_file_cut_short_is_read_to_its_last_whole_record(tmp_path: Path) -> None:
    wandb_tracker = tracker(tmp_path)
    wandb_tracker.study_started(study(), spec(), [])
    run_trial(wandb_tracker, 0)
    wandb_tracker.close()
    ended_runs(tmp_path, 2)
    [[run]] = trial_runs(tmp_path).values()
    data = run.path.read_bytes()
    run.path.write_bytes(data[:len(data) - 40])  # the writer was killed mid-record
    cut = read_run(run.path)
    assert cut.steps == run.steps[:len(cut.steps)] and cut.exit_code is None


def test_the_study_file_section_and_the_services_rule(tmp_path: Path) -> None:
    text = SPEC.replace("tracking: {mlflow: {}, tensorboard: {}}",
                        "tracking:\n  wandb: {project: p, mode: offline, dir: runs}")
    settings = parse_spec(text).tracking.wandb
    assert settings is not None and (settings.project, settings.mode, settings.dir) == (
        "p", "offline", "runs")
    [made] = open_trackers(parse_spec(text), tmp_path).trackers
    assert isinstance(made, WandbTracker) and made.dir == tmp_path / "runs"
    assert made.group is None  # the study's name, when it starts
    default = parse_spec(SPEC.replace("tracking: {mlflow: {}, tensorboard: {}}",
                                      "tracking: {wandb: {}}")).tracking.wandb
    assert default is not None and default.mode == "offline" and default.project is None
    with pytest.raises(SpecError, match=r"tracking\.wandb\.mode"):
        parse_spec(text.replace("mode: offline", "mode: cloud"))
    # A submitted study writes offline inside its results folder, online only where allowed.
    assert refused_tracking(parse_spec(text), ()) == []
    online = parse_spec(text.replace("mode: offline", "mode: online"))
    [refused] = refused_tracking(online, ())
    assert refused.path == ("tracking", "wandb", "mode")
    outside = parse_spec(text.replace("dir: runs", "dir: /tmp/elsewhere"))
    assert [i.path for i in refused_tracking(outside, ())] == [("tracking", "wandb", "dir")]
