"""`searchsvc.load(name, server=...)`: a study on a real `searchsvc serve` reads through the
REST API as the same study read from its store. The store is filled directly (no Ray) with what
the report's code reads: two arms, a failed, a pruned and a diverged trial (NaN and infinite
metrics), a seed repeat, checkpoints, scheduler events and a parent study; the service only
reads it. tests/service/test_running_studies.py does the same for a study the service ran."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml

import searchsvc
from searchsvc.cli import main
from searchsvc.client import RemoteStudies, ServiceClient
from searchsvc.core import EventKind, StudyState, TrialState
from searchsvc.errors import NotFoundError, ServiceError, SpecError
from searchsvc.report.data import report_data
from searchsvc.store import Store
from searchsvc.testing.served import SPEC, Service

pytestmark = pytest.mark.slow
STUDY = "seeded"


def seed_study(store: Store, name: str, owner: str, parent: str | None = None) -> None:
    """A finished study of SPEC's space, as a driver would have left it."""
    text = SPEC.format(name=name, trials=9) + (f"parent: {parent}\n" if parent else "")
    study = store.create_study(name=name, metric="val_loss", mode="min",
                               searcher="quasi_random", spec_text=text,
                               spec_file=f"spaces/{name}.yaml", total_trials=9,
                               results_dir=None, provenance={"host": "box", "seed": 0},
                               owner=owner)
    for number in range(8):
        depth, lr, wd = 1 + number % 2, 10 ** -(1 + number / 3), 10 ** -(2 + number / 2)
        trial = store.start_trial(study.id, number=number, arm={"depth": depth}, seed=number,
                                  config={"depth": depth, "learning_rate": lr,
                                          "weight_decay": wd}, node="10.0.0.1")
        losses = [1.0 / (step + number % 3) + 0.01 * number for step in range(1, 5)]
        if number == 5:
            store.finish_trial(trial.id, TrialState.FAILED, error="Traceback...\nValueError: bad")
            continue
        if number == 6:  # diverged: NaN and infinity in its metrics
            losses[2:] = [float("nan"), float("inf")]
        last = 2 if number == 3 else 4  # pruned at step 2
        store.record_measurements(trial.id, 1, "min", [
            (step, loss, {"val_loss": loss, "train_loss": loss / 2})
            for step, loss in enumerate(losses[:last], start=1)])
        state = {3: TrialState.PRUNED, 6: TrialState.INFEASIBLE}.get(number, TrialState.COMPLETED)
        store.finish_trial(trial.id, state, checkpoints=[f"/ckpt/{name}/{number}"])
    repeat = store.start_trial(study.id, number=8, config=store.get_trials(name)[0].config,
                               arm={"depth": 1}, seed=99, repeat_of=0)
    store.record_measurements(repeat.id, 1, "min", [(1, 0.55, {"val_loss": 0.55})])
    store.finish_trial(repeat.id, TrialState.COMPLETED)
    store.record_event(study.id, 3, EventKind.STOPPED_EARLY, step=2, data={"rung": 2})
    store.record_event(study.id, 7, EventKind.EXPLOIT, step=2, data={
        "parent": 1, "parent_step": 2, "old_config": {"learning_rate": 0.1},
        "new_config": {"learning_rate": 0.05}})
    store.update_study(name, state=StudyState.COMPLETED)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    # It queues what is submitted and runs nothing (--max-running 0): no Ray in these tests.
    service = Service(tmp_path_factory.mktemp("remote"), args=("--max-running", "0"))
    seed_study(service.store, "seeded-parent", "ada")
    seed_study(service.store, STUDY, "ada", parent="seeded-parent")
    seed_study(service.store, "bobs", "bob")
    service.start()
    try:
        yield service
    finally:
        service.stop()
        service.store.close()


def test_a_remote_study_reads_as_the_same_study_in_its_store(served: Service,
                                                            tmp_path: Path) -> None:
    remote = searchsvc.load(STUDY, server=served.url, token=served.token)
    local = searchsvc.load(STUDY, storage=served.url_db)
    assert isinstance(remote.reader, RemoteStudies)

    # The records, but for the store's own keys (which the API does not send).
    assert remote.record == replace(local.record, id=0)
    assert remote.trials == [replace(t, id=0, study_id=0) for t in local.trials]
    frame = remote.trials_dataframe()
    pd.testing.assert_frame_equal(frame, local.trials_dataframe())
    assert list(frame["number"]) == list(range(9)) and frame["repeat_of"].iloc[8] == 0
    assert [(t.number, t.best_value) for t in remote.best_trials] == [
        (t.number, t.best_value) for t in local.best_trials]
    assert 8 not in [t.number for t in remote.best_trials]  # a repeat is not ranked
    steps = remote.measurements()
    pd.testing.assert_frame_equal(steps, local.measurements())
    diverged = steps[(steps["number"] == 6) & (steps["metric"] == "val_loss")]["value"]
    assert diverged.isna().sum() == 1 and (diverged == float("inf")).sum() == 1

    # The findings: the same analysis, rungs, lineage and parent comparison included.
    found, expected = remote.report(), local.report()
    assert found.rungs and found.lineage and found.comparison is not None
    assert json.dumps(report_data(remote.record, found), default=str) == json.dumps(
        report_data(local.record, expected), default=str)
    assert remote.next_study() == local.next_study()

    # Its report files, written here from what the server sent: those of the local study,
    # and the report.json and trials.csv the server itself writes.
    mine = remote.write_report(tmp_path / "remote").parent
    theirs = local.write_report(tmp_path / "local").parent
    for name in ("trials.csv", "report.json", "report.md", "next_study.yaml"):
        assert (mine / name).read_text() == (theirs / name).read_text(), name
    client = ServiceClient(served.url, served.token)
    server = client.report(STUDY, "json", tmp_path / "server").parent
    client.report(STUDY, "csv", server)
    assert (server / "report.json").read_text() == (mine / "report.json").read_text()
    assert (server / "trials.csv").read_text() == (mine / "trials.csv").read_text()
    pd.testing.assert_frame_equal(frame, pd.read_csv(server / "trials.csv"), check_dtype=False)


def test_another_users_study_is_unknown_and_a_bad_token_is_refused(
        served: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    bob = served.store.create_token("bob")
    with pytest.raises(NotFoundError, match="no study named 'seeded'"):
        searchsvc.load(STUDY, server=served.url, token=bob)
    with pytest.raises(NotFoundError, match="no study named 'bobs'"):
        searchsvc.load("bobs", server=served.url, token=served.token)
    assert searchsvc.load("bobs", server=served.url, token=bob).record.owner == "bob"
    with pytest.raises(ServiceError, match="valid bearer token"):
        searchsvc.load(STUDY, server=served.url, token="not-a-token")
    with pytest.raises(ServiceError, match="cannot reach"):
        searchsvc.load(STUDY, server="http://127.0.0.1:9", token=served.token)

    # A study submitted from Python is checked by the server, which refuses what it may not
    # import (and creates nothing).
    refused = yaml.safe_load(SPEC.format(name="refused", trials=2))
    with pytest.raises(SpecError, match="not allowed"):
        searchsvc.run({**refused, "objective": "os:system"}, server=served.url,
                      token=served.token)
    assert "refused" not in [s.name for s in served.store.list_studies()]

    # The command line's defaults: $SEARCHSVC_SERVER (unless a storage is given), and
    # $SEARCHSVC_TOKEN.
    monkeypatch.setenv("SEARCHSVC_SERVER", served.url)
    monkeypatch.setenv("SEARCHSVC_TOKEN", bob)
    with pytest.raises(NotFoundError):
        searchsvc.load(STUDY)
    monkeypatch.setenv("SEARCHSVC_TOKEN", served.token)
    assert searchsvc.load(STUDY).record.best_value == served.store.get_study(STUDY).best_value
    assert not isinstance(searchsvc.load(STUDY, storage=served.url_db).reader, RemoteStudies)


def test_show_prints_a_remote_study_as_a_local_one(served: Service, capsys) -> None:
    assert main(["show", STUDY, "--storage", served.url_db]) == 0
    local = capsys.readouterr().out
    assert main(["show", STUDY, "--server", served.url, "--token", served.token]) == 0
    assert capsys.readouterr().out == local
    assert "5 completed, 1 pruned, 1 failed, 1 infeasible; 1 seed repeats" in local
    assert main(["show", "bobs", "--server", served.url, "--token", served.token]) == 3
    assert "no study named 'bobs'" in capsys.readouterr().err


def rows(listing: str) -> dict[str, list[str]]:
    """`searchsvc list`'s rows by study, as words (the columns' widths aside)."""
    return {words[0]: words for words in map(str.split, listing.splitlines())
            if words and words[0] in ("seeded", "seeded-parent", "bobs")}


def test_list_and_compare_read_a_server_as_a_store(served: Service, capsys,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line a study
    remote = ["--server", served.url, "--token", served.token]
    assert main(["list", "--storage", served.url_db]) == 0
    local = rows(capsys.readouterr().out)
    assert main(["list", *remote]) == 0
    mine = rows(capsys.readouterr().out)
    assert set(local) == {"seeded", "seeded-parent", "bobs"}
    assert mine == {name: local[name] for name in ("seeded", "seeded-parent")}  # no bob's

    for how in (["--json"], []):
        assert main(["compare", "seeded-parent", STUDY, *how, "--storage", served.url_db]) == 0
        expected = capsys.readouterr().out
        assert main(["compare", "seeded-parent", STUDY, *how, *remote]) == 0
        assert capsys.readouterr().out == expected and STUDY in expected
    assert main(["compare", STUDY, "bobs", *remote]) == 3
    assert "no study named 'bobs'" in capsys.readouterr().err


def test_run_with_a_server_submits_the_study_with_its_own_code(served: Service,
                                                                tmp_path: Path) -> None:
    """As `searchsvc submit`: the study file's folder is uploaded when the objective's module
    is in it, and the study is the server's (queued here: this server runs nothing)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "mytrain.py").write_text("def train(config):\n    return {'val_loss': 1.0}\n")
    spec = yaml.safe_load(SPEC.format(name="own-code", trials=2))
    (project / "study.yaml").write_text(yaml.safe_dump({**spec, "objective": "mytrain:train"}))
    token = served.store.create_token("ada", allow_code=True)

    study = searchsvc.run(project / "study.yaml", server=served.url, token=token, wait=False)
    assert isinstance(study.reader, RemoteStudies) and study.record.state == "created"
    stored = served.store.get_study("own-code")
    assert stored.owner == "ada" and stored.provenance["code"]["sha256"]
    with pytest.raises(TimeoutError, match="'own-code' is still created"):
        study.wait(every=0.1, timeout=0.3)

    # A dict's study uploads nothing unless told: the server's own objective.
    queued = searchsvc.run({**spec, "study": "server-code"}, server=served.url,
                           token=served.token, wait=False)
    assert queued.record.state == "created"
    assert "code" not in served.store.get_study("server-code").provenance


def test_a_remote_studys_campaign_is_the_one_in_its_store(served: Service, capsys) -> None:
    from searchsvc.analysis.campaign import CAMPAIGN_KEY, Decision, first_round, next_round
    from searchsvc.spec import spec_of

    store = served.store
    seed_study(store, "round-one", "ada")
    seed_study(store, "round-two", "ada", parent="round-one")
    one = store.get_study("round-one")
    one = store.update_study("round-one", provenance={
        **one.provenance, CAMPAIGN_KEY: first_round(one, spec_of(one))})
    made = [Decision("range", "learning_rate: [0.001, 0.1] -> [0.01, 1]",
                     {"boundary_check": "near_high"})]
    store.update_study("round-two", provenance={
        **store.get_study("round-two").provenance, CAMPAIGN_KEY: next_round(one, made)})
    remote = searchsvc.load("round-two", server=served.url, token=served.token).campaign()
    local = searchsvc.load("round-two", storage=served.url_db).campaign()
    assert remote == local
    assert [r.study for r in remote.rounds] == ["round-one", "round-two"]
    assert remote.rounds[1].decisions == tuple(made)
    assert main(["campaign", "round-one", "--json", "--server", served.url,
                 "--token", served.token]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(local.as_dict()))


def test_queue_and_status_print_the_line_the_api_gives(served: Service, capsys) -> None:
    remote = ["--server", served.url, "--token", served.token]
    served.call("POST", "/studies?preflight=false", SPEC.format(name="waits-in-queue", trials=2))
    queue = served.call("GET", "/queue")
    [line] = [s["line"] for s in queue["studies"] if s["name"] == "waits-in-queue"]
    assert line.startswith("queued: ") and line.endswith("the service drives 0 at once")
    assert main(["queue", *remote]) == 0
    printed = capsys.readouterr().out
    assert "waits-in-queue: created · priority 0 · #" in printed and line in printed
    assert "bobs" not in printed
    assert main(["status", "waits-in-queue", *remote]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"  {line}"
    assert main(["queue", "--json", *remote]) == 0
    assert json.loads(capsys.readouterr().out)["studies"] == queue["studies"]


def test_submit_with_a_priority_the_token_may_not_ask_for_is_refused(
        served: Service, tmp_path: Path, capsys) -> None:
    spec = tmp_path / "urgent.yaml"
    spec.write_text(SPEC.format(name="urgent", trials=2))
    lead = served.store.create_token("ada", max_priority=3)
    assert main(["submit", str(spec), "--no-code", "--priority", "4", "--server", served.url,
                 "--token", lead]) == 10
    assert "priority 4 is above this token's highest, 3" in capsys.readouterr().err
    assert main(["submit", str(spec), "--no-code", "--priority", "3", "--server", served.url,
                 "--token", lead]) == 0
    [mine] = [s for s in served.call("GET", "/queue")["studies"] if s["name"] == "urgent"]
    assert mine["priority"] == 3
