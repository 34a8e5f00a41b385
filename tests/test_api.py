"""The Python API as a notebook uses it: run a study on Ray, load it back, and read trials,
measurements and findings as the report files have them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

import searchsvc
from searchsvc.errors import NotFoundError, SearchsvcError, SpecError

STUDY = {
    "study": "notebook",
    "objective": "objectives.synthetic:playbook",
    "metric": "val_loss",
    "mode": "min",
    "searcher": "quasi_random",
    "budget": {"trials": 6, "max_concurrent": 2, "max_steps": 4},
    "noise": {"top_k": 1, "seeds": 2},  # then 2 arms x 1 config x 2 seeds: 4 repeats
    "seed": 1,
    "parameters": {
        "depth": {"role": "scientific", "values": [1, 2]},
        "learning_rate": {"role": "nuisance", "low": 1.0e-4, "high": 1.0e-1, "scale": "log"},
        "weight_decay": {"role": "fixed", "value": 1.0e-4},
    },
}
TOTAL = 6 + 4  # the search's trials and the seed repeats


@pytest.mark.slow
def test_a_notebook_runs_a_study_and_reads_what_the_report_files_hold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCHSVC_HOME", str(tmp_path / "home"))
    storage = f"sqlite:///{tmp_path / 'studies.db'}"

    study = searchsvc.run(STUDY, storage=storage, results=tmp_path / "results", num_cpus=2)
    assert study.record.state == "completed"

    again = searchsvc.load("notebook", storage=storage)  # a later notebook session
    folder = tmp_path / "results" / "notebook"
    frame = again.trials_dataframe()
    from_csv = pd.read_csv(folder / "trials.csv")
    pd.testing.assert_frame_equal(frame.drop(columns=["node"]), from_csv.drop(columns=["node"]),
                                  check_dtype=False)
    assert list(frame["number"]) == list(range(TOTAL)) and set(frame["depth"]) == {1, 2}
    repeats = frame[frame["repeat_of"].notna()]
    assert len(repeats) == 4 and set(repeats["repeat_of"]) <= set(range(6))

    best = again.best_trials
    values = [t.best_value for t in best]
    assert len(best) == 6 and values == sorted(values)  # mode: min, best first (no repeats)

    steps = again.measurements()
    losses = steps[steps["metric"] == "val_loss"]
    assert len(losses) == TOTAL * 4  # every trial reported every step
    for trial in again.trials:
        mine = losses[losses["number"] == trial.number]["value"]
        assert math.isclose(mine.min(), trial.best_value)

    findings = again.report()
    written = json.loads((folder / "report.json").read_text())
    assert [t.number for t in findings.summary.best_trials] == [
        t["number"] for t in written["best_trials"]]
    assert again.next_study() == (folder / "next_study.yaml").read_text()


def test_bad_input_gets_the_same_errors_as_the_command_line(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    with pytest.raises(SpecError, match=r"<dict>.*budget\.trials"):
        searchsvc.run({**STUDY, "budget": {"trials": -3}}, storage=storage)
    with pytest.raises(NotFoundError, match="no study named 'nope'"):
        searchsvc.load("nope", storage=storage)


def test_a_server_is_not_given_with_the_options_of_a_local_study() -> None:
    with pytest.raises(SearchsvcError, match=r"^storage, num_cpus: options of a local run"):
        searchsvc.run(STUDY, server="http://127.0.0.1:9", storage="memory:", num_cpus=2)
    with pytest.raises(SearchsvcError, match="give storage or server, not both"):
        searchsvc.load("notebook", storage="memory:", server="http://127.0.0.1:9")


def test_a_function_given_as_the_objective_must_be_the_one_the_study_names(
        tmp_path: Path) -> None:
    def train(config: dict) -> float:
        return 0.0

    ref = f"{__name__}:{train.__qualname__}".replace("<", "").replace(">", "")
    with pytest.raises(SearchsvcError, match=r"names 'objectives.synthetic:playbook' but "
                       rf"objective= is '{ref}': leave the study's objective out"):
        searchsvc.run(STUDY, objective=train, storage=f"sqlite:///{tmp_path / 'db'}")
    assert not (tmp_path / "db").exists()  # refused before anything was stored
