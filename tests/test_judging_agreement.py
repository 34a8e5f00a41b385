"""Every surface agrees on a study's best and its counts (docs/DESIGN.md, "What every surface
reports"). One study is planted straight into a SQLite store (no Ray): completed, pruned,
failed, infeasible and interrupted search trials, a trial infeasible by the study's
constraint (its values kept), and seed repeats that beat every search trial. Its best is trial
0's 0.3 (the only better search values come from trials that failed, diverged, were
interrupted or broke the bound), and its counts are the search trials' by state with the two
repeats apart; the run's summary line, live progress, ``list``/``show``/``status``, the Python
API (local and remote), REST, the web UI, report.json/md/html, trials.csv and the MLflow parent
run all say so."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import searchsvc
from searchsvc.api import Study
from searchsvc.cli import app as cli_app
from searchsvc.cli import run_summary
from searchsvc.client import RemoteStudies, ServiceClient
from searchsvc.client import _error as client_error
from searchsvc.core import StudyState, TrialState
from searchsvc.driver.progress import Progress
from searchsvc.reporting import write_report
from searchsvc.service import ServiceConfig, create_app
from searchsvc.spec import parse_spec
from searchsvc.store import SqlStore, Store

NAME = "agree"
SPEC = f"""
study: {NAME}
objective: objectives.synthetic:branin
metric: loss
mode: min
searcher: random
budget: {{trials: 6}}
constraints: [{{metric: memory_mb, max: 100}}]
parameters:
  x: {{low: 0.0, high: 1.0}}
"""
C, P, F, INF, X = (TrialState.COMPLETED, TrialState.PRUNED, TrialState.FAILED,
                   TrialState.INFEASIBLE, TrialState.INTERRUPTED)
# number: (state, losses reported, memory_mb, repeat_of)
TRIALS: dict[int, tuple[TrialState, list[float], float, int | None]] = {
    0: (C, [0.9, 0.3, 0.35], 50, None),  # the best: its best step, 0.3
    1: (P, [0.8, 0.4], 60, None),
    2: (INF, [0.5, 0.1], 500, None),  # over the memory bound: infeasible, values kept
    3: (F, [0.6, 0.05], 40, None),
    4: (INF, [0.04, math.nan], 40, None),
    5: (X, [0.02], 40, None),
    6: (C, [0.5, 0.01], 50, 0),  # seed repeats of trial 0: luckier than any search trial
    7: (C, [0.5, 0.015], 50, 0),
}
BEST, BEST_NUMBER = 0.3, 0
SEARCH = {"completed": 1, "pruned": 1, "failed": 1, "infeasible": 2, "interrupted": 1}
REPEATS = {"completed": 2}
ENDED = 7  # the interrupted trial has not finished: it runs again on resume
TOKEN_USER = "ada"


def plant(store: Store) -> None:
    spec = parse_spec(SPEC)
    study = store.create_study(name=NAME, metric="loss", mode="min", searcher="random",
                               spec_text=SPEC, spec_file=f"{NAME}.yaml", total_trials=8,
                               results_dir=None, provenance={}, owner=TOKEN_USER,
                               constraints=spec.constraints)
    for number, (state, losses, memory, repeat_of) in TRIALS.items():
        t = store.start_trial(study.id, number=number, config={"x": number / 10}, arm={},
                              seed=number, repeat_of=repeat_of)
        store.record_measurements(t.id, 1, "min", [
            (step, v, {"loss": v, "memory_mb": memory}) for step, v in enumerate(losses, 1)])
        final = {"memory_mb": memory, "loss": [v for v in losses if math.isfinite(v)][-1]}
        store.finish_trial(t.id, state, final_metrics=final,
                           error=None if state in (C, P) else f"trial {number} {state}")
    store.update_study(NAME, state=StudyState.COMPLETED)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    plant(s)
    return s


class InProcessClient(ServiceClient):
    """The REST client, its requests answered by the app in this process."""

    def __init__(self, web: TestClient, token: str):
        super().__init__("http://testserver", token)
        self.web = web

    def _request(self, method: str, path: str, body: bytes | None = None,
                 content_type: str | None = None) -> bytes:
        response = self.web.request(method, path, content=body,
                                    headers={"Authorization": f"Bearer {self.token}"})
        if response.is_error:  # as the real client raises them
            raise client_error(response.status_code, response.content)
        return response.content


def number_in(pattern: str, text: str) -> float:
    found = re.search(pattern, text, re.S)
    assert found, f"{pattern!r} not in {text[:2000]}"
    return float(found.group(1))


def search_counts_of(rows: list[dict[str, Any]], repeat_key: str = "repeat_of"
                     ) -> tuple[dict[str, int], dict[str, int]]:
    search: dict[str, int] = {}
    repeats: dict[str, int] = {}
    for row in rows:
        into = repeats if row[repeat_key] not in (None, "") else search
        into[row["state"]] = into.get(row["state"], 0) + 1
    return search, repeats


def test_every_surface_agrees_on_the_best_and_the_counts(
        store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from searchsvc.driver.run import RunOutcome

    record = store.get_study(NAME)
    assert (record.best_value, dict(record.trial_counts), dict(record.repeat_counts)) == (
        BEST, SEARCH, REPEATS)
    assert record.counts.ended == ENDED
    counts_text = record.counts.describe()
    assert counts_text == ("1 completed, 1 pruned, 1 failed, 2 infeasible, 1 interrupted; "
                           "2 seed repeats")

    # The summary line `run` and `resume` end with.
    lines = run_summary(RunOutcome(record, ENDED, 8, "all trials finished"))
    assert lines[0] == f"study {NAME}: completed — {ENDED}/8 trials finished (all trials finished)"
    assert lines[1] == f"best loss: {BEST:.6g}"

    # Live progress, fed the same trials as a run would.
    spec = parse_spec(SPEC)
    progress = Progress(NAME, 8, "loss", "min", constraints=spec.constraints, live=False,
                        stream=open(tmp_path / "progress.txt", "w"))  # noqa: SIM115
    for number, (state, losses, memory, repeat_of) in TRIALS.items():
        progress.trial_started(number)
        for v in losses:
            progress.trial_result(number, v if math.isfinite(v) else None)
        progress.trial_finished(number, state, repeat_of=repeat_of,
                                final_metrics={"memory_mb": memory})
    assert (progress.best, progress.best_trial.number) == (BEST, BEST_NUMBER)  # type: ignore[union-attr]
    assert (progress.done, progress.failed) == (ENDED, 3)  # failed or infeasible
    ended = {state: n for state, n in SEARCH.items() if state != "interrupted"}
    assert dict(progress.counts.search) == ended and dict(progress.counts.repeats) == REPEATS

    # The command line: list, show, status (against the service below).
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    runner = CliRunner()
    listed = runner.invoke(cli_app, ["list", "--storage", url])
    assert listed.exit_code == 0, listed.output
    assert "best loss" in listed.output and f" {BEST:.4g} " in listed.output
    assert f"{ENDED}/8" in listed.output
    shown = runner.invoke(cli_app, ["show", NAME, "--storage", url])
    assert shown.exit_code == 0, shown.output
    assert f"best loss: {BEST:.6g}" in shown.output
    assert ("trials: 1 completed, 1 pruned, 1 failed, 2 infeasible, 1 interrupted; "
            "2 seed repeats (of 8)") in shown.output
    first_row = re.search(r"│\s*(\d+)\s*│\s*([\d.]+)\s*│", shown.output)
    assert first_row and (int(first_row.group(1)), float(first_row.group(2))) == (
        BEST_NUMBER, BEST)

    # The service: REST, the web UI, and a remote study through the REST client.
    token = store.create_token(TOKEN_USER)
    web = TestClient(create_app(store, ServiceConfig(allow_objectives=("objectives.",))))
    auth = {"Authorization": f"Bearer {token}"}
    [listed_json] = web.get("/studies", headers=auth).json()
    detail = web.get(f"/studies/{NAME}", headers=auth).json()
    for body in (listed_json, detail):
        assert (body["best_value"], body["trial_counts"], body["repeat_counts"]) == (
            BEST, SEARCH, REPEATS)
    ui_list = web.get("/ui", headers=auth).text
    assert number_in(r'<td class="num best">\s*([\d.]+)\s*</td>', ui_list) == BEST
    assert f"{ENDED}/8" in ui_list
    page = web.get(f"/ui/studies/{NAME}", headers=auth).text
    assert number_in(r'<b id="best">\s*([\d.]+)\s*</b>', page) == BEST
    assert re.findall(r'<tr class="best" data-trial="(\d+)"', page) == [str(BEST_NUMBER)]
    assert number_in(r'<b id="progress">\s*(\d+)/8', page) == ENDED
    shown_counts = re.search(r'id="counts">([^<]*)<', page)
    assert shown_counts and shown_counts.group(1).strip() == (
        "completed: 1, pruned: 1, failed: 1, infeasible: 2, interrupted: 1; seed repeats: 2")
    best_first = web.get(f"/ui/studies/{NAME}?sort=best", headers=auth).text
    assert re.findall(r'data-trial="(\d+)"', best_first)[:2] == ["0", "1"]

    remote_client = InProcessClient(web, token)
    monkeypatch.setattr("searchsvc.cli._client", lambda server, token: remote_client)
    status = runner.invoke(cli_app, ["status", NAME, "--server", "http://testserver",
                                     "--wait"])
    assert status.exit_code == 0, status.output
    assert " ".join(status.output.split()) == (
        f"{NAME}: completed · {counts_text} of 8 · best loss {BEST:.6g}")

    # The Python API, local and remote: repr, best trials, DataFrame.
    local = searchsvc.load(NAME, storage=url)
    remote = Study(NAME, RemoteStudies(remote_client))
    for study in (local, remote):
        assert repr(study) == (f"<Study {NAME!r} completed: {counts_text}, best loss={BEST}>")
        assert [t.number for t in study.best_trials] == [0, 1]
        frame = study.trials_dataframe()
        rows = [{"state": s, "repeat_of": None if math.isnan(r) else r}
                for s, r in zip(frame["state"], frame["repeat_of"], strict=True)]
        assert search_counts_of(rows) == (SEARCH, REPEATS)
        assert frame.loc[frame["number"] == BEST_NUMBER, "best_value"].item() == BEST

    # The report: report.json, report.md, report.html and trials.csv.
    files = write_report(store, NAME, tmp_path / "report").files
    data = json.loads(files["json"].read_text())
    assert [(t["number"], t["value"]) for t in data["best_trials"]] == [(0, BEST), (1, 0.4)]
    assert {k: n for k, n in data["counts"].items() if n} == SEARCH
    assert data["repeat_counts"] == REPEATS
    md = files["md"].read_text()
    assert "- trials: 8 of 8 (1 completed, 1 pruned, 1 failed, 2 infeasible, 1 interrupted; " \
           "2 seed repeats)" in md
    assert number_in(r"\| trial \| loss \|[^\n]*\n\|[^\n]*\n\| 0 \| ([\d.]+) \|", md) == BEST
    html = files["html"].read_text()
    best_section = html[html.index('<section id="best">'):]
    assert number_in(r"<tr><td>0</td><td>([\d.]+)</td>", best_section) == BEST
    assert "2 seed repeats" in html
    with files["csv"].open() as handle:
        table = list(csv.DictReader(handle))
    assert search_counts_of(table) == (SEARCH, REPEATS)
    assert float(next(r for r in table if r["number"] == "0")["best_value"]) == BEST


def test_the_mlflow_parent_run_has_the_same_best_and_counts(store: Store, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    import mlflow

    from searchsvc.tracking.mlflow_tracker import MlflowTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    tracker = MlflowTracker(uri, "exp", tmp_path / "artifacts")
    record = store.get_study(NAME)
    tracker.study_started(record, parse_spec(SPEC), [])
    tracker.study_finished(record, None)
    [parent] = mlflow.search_runs(experiment_names=["exp"], output_format="list",
                                  filter_string="tags.`searchsvc.kind` = 'study'")
    metrics = parent.data.metrics
    assert metrics["best_loss"] == BEST
    assert {k.removeprefix("trials_"): int(v) for k, v in metrics.items()
            if k.startswith("trials_")} == SEARCH
    assert metrics["seed_repeats"] == 2


def test_the_ui_progress_plot_ends_at_the_study_best(store: Store) -> None:
    from searchsvc.report.charts.progress import progress_plot

    plot = progress_plot(store.get_study(NAME), store.get_trials(NAME))
    assert plot is not None and plot.metric == "loss"
    # Every ended trial with a value is a point, repeats and failures included (they happened);
    # the line only ever takes the study's best as core.judging defines it.
    assert len(plot.values) == len(plot.labels) == len(plot.order)
    assert plot.best_so_far[-1] == BEST
    assert all(b is None or b >= BEST for b in plot.best_so_far)
    assert min(plot.values) < BEST  # luckier repeats and broken trials are drawn, not the best
