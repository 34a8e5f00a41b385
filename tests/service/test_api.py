"""The REST API's contract: auth, isolation between users, validation messages, limits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from searchsvc.core import EventKind, StudyState, TrialState
from searchsvc.service import ServiceConfig, create_app
from searchsvc.store import SqlStore, Store

ROOT = Path(__file__).resolve().parents[2]
SPEC = (ROOT / "spaces" / "quickstart.yaml").read_text()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")


@pytest.fixture
def client(store: Store) -> TestClient:
    return TestClient(create_app(store, ServiceConfig(allow_objectives=("objectives.",),
                                                      max_body_bytes=20_000)))


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_health_needs_no_token_but_everything_else_does(client: TestClient) -> None:
    assert client.get("/health").json()["status"] == "ok"
    for method, path in [("get", "/studies"), ("get", "/studies/x"), ("post", "/studies"),
                         ("get", "/studies/x/trials")]:
        response = getattr(client, method)(path)
        assert response.status_code == 401, (method, path)
    assert client.get("/studies", headers=auth("not-a-token")).status_code == 401


def test_a_user_creates_lists_and_reads_a_study(client: TestClient, store: Store) -> None:
    token = store.create_token("ada")
    created = client.post("/studies", content=SPEC, headers=auth(token))
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "quickstart" and created.json()["state"] == "created"
    assert [s["name"] for s in client.get("/studies", headers=auth(token)).json()] == [
        "quickstart"]
    assert client.get("/studies/quickstart", headers=auth(token)).json()["searcher"]
    assert client.get("/studies/quickstart/trials", headers=auth(token)).json() == []
    again = client.post("/studies", content=SPEC, headers=auth(token))
    assert again.status_code == 409 and "already exists" in again.json()["detail"]


def test_another_users_study_is_not_found(client: TestClient, store: Store) -> None:
    ada, bob = store.create_token("ada"), store.create_token("bob")
    assert client.post("/studies", content=SPEC, headers=auth(ada)).status_code == 201
    for path in ["/studies/quickstart", "/studies/quickstart/trials",
                 "/studies/quickstart/trials?curves_of=0", "/studies/quickstart/events"]:
        assert client.get(path, headers=auth(bob)).status_code == 404
    assert client.get("/studies", headers=auth(bob)).json() == []
    assert client.get("/studies/nope", headers=auth(ada)).status_code == 404


def test_an_invalid_study_file_gets_exactly_the_messages_validate_prints(
        client: TestClient, store: Store, tmp_path: Path) -> None:
    bad = SPEC.replace("mode: min", "mode: minimum")
    response = client.post("/studies", content=bad, headers=auth(store.create_token("ada")))
    assert response.status_code == 422
    path = tmp_path / "bad.yaml"
    path.write_text(bad)
    validate = subprocess.run([sys.executable, "-m", "searchsvc.cli", "validate", str(path)],
                              capture_output=True, text=True, cwd=ROOT)
    printed = [line.replace(str(path), "<request>") for line in validate.stderr.splitlines()]
    assert response.json()["errors"] == printed and printed


def test_objectives_outside_the_allowed_prefixes_are_refused(client: TestClient,
                                                             store: Store) -> None:
    spec = SPEC.replace("objective: objectives.", "objective: os.")
    response = client.post("/studies", content=spec, headers=auth(store.create_token("ada")))
    assert response.status_code == 422
    assert "not allowed" in response.json()["detail"] and "objectives." in (
        response.json()["detail"])
    assert store.list_studies() == []  # nothing imported, nothing created


@pytest.mark.parametrize(("tracking", "field"), [
    ("{tensorboard: {dir: /etc/searchsvc}}", "tracking.tensorboard.dir"),
    ("{tensorboard: {dir: ../../elsewhere}}", "tracking.tensorboard.dir"),
    ("{mlflow: {tracking_uri: 'http://10.0.0.5:5000'}}", "tracking.mlflow.tracking_uri"),
    ("{mlflow: {tracking_uri: 'sqlite:////var/lib/other.db'}}",
     "tracking.mlflow.tracking_uri"),
])
def test_a_submitted_study_tracks_only_where_the_server_allows(
        client: TestClient, store: Store, tracking: str, field: str) -> None:
    token = store.create_token("ada")
    response = client.post("/studies", content=SPEC + f"tracking: {tracking}\n",
                           headers=auth(token))
    assert response.status_code == 422
    assert field in response.json()["detail"]
    assert store.list_studies() == []
    inside = client.post("/studies", content=SPEC + "tracking: {mlflow: {}, tensorboard: "
                         "{dir: tb}}\n", headers=auth(token))
    assert inside.status_code == 201, inside.json()


def test_a_tracking_server_the_admin_allows_is_accepted(store: Store) -> None:
    config = ServiceConfig(allow_tracking_uris=("http://mlflow.internal:5000",))
    client = TestClient(create_app(store, config))
    response = client.post(
        "/studies", headers=auth(store.create_token("ada")),
        content=SPEC + "tracking: {mlflow: {tracking_uri: 'http://mlflow.internal:5000'}}\n")
    assert response.status_code == 201, response.json()


def test_oversized_bodies_are_refused(client: TestClient, store: Store) -> None:
    big = SPEC + "#" * 30_000
    response = client.post("/studies", content=big, headers=auth(store.create_token("ada")))
    assert response.status_code == 413


@pytest.mark.parametrize("path", ["/studies/..%2F..%2Fetc%2Fpasswd", "/studies/../../etc/passwd",
                                  "/studies/%2e%2e/trials"])
def test_path_traversal_attempts_find_nothing(client: TestClient, store: Store,
                                              path: str) -> None:
    assert client.get(path, headers=auth(store.create_token("ada"))).status_code == 404


def test_the_openapi_document_is_published(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/health", "/studies", "/studies/{name}", "/studies/{name}/trials",
            "/studies/{name}/events"} <= set(paths)


def test_report_formats_are_a_closed_list_and_other_users_reports_are_hidden(
        client: TestClient, store: Store) -> None:
    ada, bob = store.create_token("ada"), store.create_token("bob")
    assert client.post("/studies", content=SPEC, headers=auth(ada)).status_code == 201
    bad = client.get("/studies/quickstart/report?format=../../etc/passwd", headers=auth(ada))
    assert bad.status_code == 422
    assert client.get("/studies/quickstart/report", headers=auth(bob)).status_code == 404
    report = client.get("/studies/quickstart/report?format=json", headers=auth(ada))
    assert report.status_code == 200 and report.json()["study"] == "quickstart"


def test_a_server_without_a_runner_says_it_runs_nothing(client: TestClient,
                                                           store: Store) -> None:
    token = store.create_token("ada")
    assert client.post("/studies", content=SPEC, headers=auth(token)).status_code == 201
    assert client.post("/studies/quickstart/cancel", headers=auth(token)).status_code == 503


def test_resuming_a_study_counts_against_the_users_queue_limit(store: Store) -> None:
    client = TestClient(create_app(store, ServiceConfig(max_queued_per_user=1)))
    token = store.create_token("ada")
    assert client.post("/studies", content=SPEC, headers=auth(token)).status_code == 201
    store.update_study("quickstart", state=StudyState.INTERRUPTED)
    other = SPEC.replace("study: quickstart", "study: other")
    assert client.post("/studies", content=other, headers=auth(token)).status_code == 201
    third = SPEC.replace("study: quickstart", "study: third")
    for full in (client.post("/studies", content=third, headers=auth(token)),
                 client.post("/studies/quickstart/resume", headers=auth(token))):
        assert full.status_code == 429, full.text  # resume is refused as create is
        assert "serve --max-queued-per-user 1" in full.json()["detail"]
    assert store.get_study("quickstart").state == StudyState.INTERRUPTED
    store.update_study("other", state=StudyState.COMPLETED)
    # Within the limit it goes on to the runner, which this server has not.
    assert client.post("/studies/quickstart/resume", headers=auth(token)).status_code == 503


# Inputs the OpenAPI fuzz test (test_openapi_fuzz.py) found answering 500.

@pytest.mark.parametrize(("body", "error"), [
    ("\x00", "<request>:1: (file): not valid YAML: unacceptable character #x0000 (special "
     "characters are not allowed)"),
    ("study: quickstart\n\x07\n", "<request>:2: (file): not valid YAML: unacceptable "
     "character #x0007 (special characters are not allowed)")])
def test_a_control_character_in_a_study_file_is_refused_with_its_line(
        client: TestClient, store: Store, body: str, error: str) -> None:
    response = client.post("/studies", content=body, headers=auth(store.create_token("ada")))
    assert response.status_code == 422
    assert response.json()["errors"] == [error]


def json_spec(**fields: object) -> str:
    """The quickstart as JSON with ``fields`` replaced; characters beyond U+FFFF are written as
    escaped UTF-16 pairs ("\\ud800\\udc00"), which YAML reads as two separate halves."""
    return json.dumps({**yaml.safe_load(SPEC), **fields}, ensure_ascii=True)


def test_an_escaped_utf16_pair_in_a_json_study_file_is_one_character(
        client: TestClient, store: Store) -> None:
    token = store.create_token("ada")
    created = client.post("/studies", content=json_spec(metric="\U00010000"),
                          headers=auth(token))
    assert created.status_code == 201, created.text  # was 500: the store could not encode it
    assert client.get("/studies/quickstart", headers=auth(token)).json()["metric"] == (
        "\U00010000")
    bad_name = client.post("/studies", content=json_spec(
        study="other", parameters={"\U00010000": {"value": 1}}), headers=auth(token))
    assert bad_name.status_code == 422  # was 500: the 422's message could not be encoded
    assert "parameters.\U00010000: parameter names must be identifiers" in (
        bad_name.json()["detail"])


def test_a_lone_utf16_half_in_a_study_file_is_refused(client: TestClient,
                                                      store: Store) -> None:
    response = client.post("/studies", content=json_spec(metric="val\ud800loss"),
                           headers=auth(store.create_token("ada")))
    assert response.status_code == 422
    assert response.json()["errors"] == [
        "<request>:1: metric: not valid Unicode: \\ud800 is half of a UTF-16 surrogate pair, "
        "and its other half is missing"]
    assert store.list_studies() == []


def test_a_study_reads_whole_through_the_api_steps_of_chosen_trials_and_non_finite_metrics(
        client: TestClient, store: Store) -> None:
    """What ``searchsvc.load(name, server=...)`` reads: the study file and provenance, each
    trial's timings and checkpoints, the steps of the trials asked for (a diverged step's NaN
    and infinity as the store's strings, not a server error) and the scheduler's events."""
    token = store.create_token("ada")
    assert client.post("/studies", content=SPEC, headers=auth(token)).status_code == 201
    study = store.get_study("quickstart")
    store.update_study("quickstart", provenance={"host": "box", "seed": 7})
    for number in (0, 1):
        trial = store.start_trial(study.id, number=number, config={"lr": 0.1 * (number + 1)},
                                  arm={}, seed=number).id
        store.record_measurements(trial, 1, "min", [
            (1, 0.5, {study.metric: 0.5, "loss": 1.5}),
            (2, None, {study.metric: float("nan"), "loss": float("inf")})])
        store.finish_trial(trial, TrialState.COMPLETED, checkpoints=[f"/ckpt/{number}"])
    store.record_event(study.id, 1, EventKind.STOPPED_EARLY, step=2, data={"rung": 1})

    detail = client.get("/studies/quickstart", headers=auth(token)).json()
    assert detail["spec_text"] == SPEC and detail["owner"] == "ada"
    assert detail["provenance"] == {"host": "box", "seed": 7} and detail["spec_file"]
    assert "spec_text" not in client.get("/studies", headers=auth(token)).json()[0]

    plain = client.get("/studies/quickstart/trials", headers=auth(token)).json()
    assert [t["checkpoints"] for t in plain] == [["/ckpt/0"], ["/ckpt/1"]]
    assert all(t["finished_at"] >= t["started_at"] > 0 for t in plain)
    assert all("measurements" not in t for t in plain)
    chosen = client.get("/studies/quickstart/trials?curves_of=1", headers=auth(token))
    assert chosen.status_code == 200, chosen.text
    [first, second] = chosen.json()
    assert "measurements" not in first
    assert [m["metrics"] for m in second["measurements"]] == [
        {study.metric: 0.5, "loss": 1.5}, {study.metric: "NaN", "loss": "Infinity"}]
    assert second["measurements"][1]["value"] is None
    every = client.get("/studies/quickstart/trials?curves=true", headers=auth(token))
    assert every.status_code == 200 and all(len(t["measurements"]) == 2 for t in every.json())

    [event] = client.get("/studies/quickstart/events", headers=auth(token)).json()
    assert (event["number"], event["kind"], event["step"], event["data"]) == (
        1, "stopped_early", 2, {"rung": 1})


def test_the_queue_lists_a_users_own_studies_and_needs_a_server_that_runs_them(
        client: TestClient, store: Store, tmp_path: Path) -> None:
    from searchsvc.service.runner import StudyRunner

    ada, bob = store.create_token("ada"), store.create_token("bob")
    assert client.get("/queue", headers=auth(ada)).status_code == 503
    # A server that drives no study at once (never started: nothing runs).
    served = TestClient(create_app(store, ServiceConfig(),
                                   StudyRunner(store, max_running=0, home=tmp_path)))
    for name, token in (("first", ada), ("second", bob), ("third", ada)):
        spec = SPEC.replace("study: quickstart", f"study: {name}")
        assert served.post("/studies", content=spec, headers=auth(token)).status_code == 201
    queue = served.get("/queue", headers=auth(ada)).json()
    assert [(s["name"], s["position"], s["line"]) for s in queue["studies"]] == [
        ("first", 1, "queued: 0 studies ahead of it; the service drives 0 at once"),
        ("third", 3, "queued: 2 studies ahead of it; the service drives 0 at once")]
    assert queue["other_users"] == 1 and "second" not in json.dumps(queue)
    assert [s["name"] for s in served.get("/queue", headers=auth(bob)).json()["studies"]] == [
        "second"]


def test_a_priority_above_the_tokens_highest_is_refused(client: TestClient,
                                                         store: Store) -> None:
    from searchsvc.service.sharing import priority_of

    plain, lead = store.create_token("ada"), store.create_token("cy", max_priority=10)
    urgent = SPEC.replace("study: quickstart", "study: urgent\npriority: 5")
    for token, query in ((plain, ""), (plain, "?priority=5"), (lead, "?priority=11")):
        refused = client.post(f"/studies{query}", content=urgent, headers=auth(token))
        assert refused.status_code == 403, (query, refused.text)
        assert "`searchsvc tokens create NAME --max-priority" in refused.json()["detail"]
    assert client.post("/studies?priority=101", content=SPEC,
                       headers=auth(lead)).status_code == 422  # beyond any token's
    assert client.post("/studies", content=urgent, headers=auth(lead)).status_code == 201
    assert priority_of(store.get_study("urgent")) == 5  # the study file's
    assert client.post("/studies?priority=7", content=SPEC, headers=auth(lead)).status_code == 201
    assert priority_of(store.get_study("quickstart")) == 7  # submit's, over the file's 0
