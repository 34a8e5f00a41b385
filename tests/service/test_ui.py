"""The web UI's rules, in-process: sign-in with a token, each user sees only their own studies,
pages show progress and trials, nothing a trial reports is rendered as markup, and the sign-in
form never redirects off the site. (tests/service/test_end_to_end.py drives it in Chromium.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from searchsvc.core import TrialState
from searchsvc.service import ServiceConfig, create_app
from searchsvc.service.ui import COOKIE
from searchsvc.store import SqlStore, Store
from tests.service.test_api import SPEC, auth


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")


@pytest.fixture
def client(store: Store) -> TestClient:
    return TestClient(create_app(store, ServiceConfig()), follow_redirects=False)


def signed_in(client: TestClient, token: str) -> TestClient:
    response = client.post("/ui/login", data={"token": token, "next": "/ui"})
    assert response.status_code == 303 and response.headers["location"] == "/ui"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    return client


def with_trials(client: TestClient, store: Store, token: str) -> None:
    """The quickstart study with two finished trials: one completed, one failed with an error
    that holds markup."""
    assert client.post("/studies", content=SPEC, headers=auth(token)).status_code == 201
    study = store.get_study("quickstart")
    good = store.start_trial(study.id, number=0, config={"lr": 0.01}, arm={}, seed=1).id
    store.record_measurements(good, 1, study.mode, [(1, 0.5, {study.metric: 0.5}),
                                                    (2, 0.25, {study.metric: 0.25})])
    store.finish_trial(good, TrialState.COMPLETED)
    bad = store.start_trial(study.id, number=1, config={"lr": 0.5}, arm={}, seed=2).id
    store.finish_trial(bad, TrialState.FAILED, error="<script>alert(1)</script> went wrong")


def test_signed_out_visitors_are_sent_to_sign_in(client: TestClient) -> None:
    for path in ["/ui", "/ui/studies/quickstart", "/ui/studies/quickstart/report"]:
        response = client.get(path)
        assert response.status_code == 303, path
        assert response.headers["location"].startswith("/ui/login?next=/ui")
    assert client.get("/").headers["location"] == "/ui"


def test_a_bad_token_is_refused_and_sets_no_cookie(client: TestClient) -> None:
    response = client.post("/ui/login", data={"token": "nope"})
    assert response.status_code == 401 and "not valid" in response.text
    assert "set-cookie" not in response.headers


def test_sign_in_never_redirects_to_another_site(client: TestClient, store: Store) -> None:
    token = store.create_token("ada")
    for target in ["https://evil.example/", "//evil.example/ui", "/ui//evil.example"]:
        response = client.post("/ui/login", data={"token": token, "next": target})
        assert response.headers["location"] == "/ui", target


def test_the_study_list_shows_progress_and_best_and_only_the_users_studies(
        client: TestClient, store: Store) -> None:
    ada, bob = store.create_token("ada"), store.create_token("bob")
    with_trials(client, store, ada)
    page = signed_in(client, ada).get("/ui")
    assert page.status_code == 200
    total = store.get_study("quickstart").total_trials
    assert 'data-study="quickstart"' in page.text
    assert f'<span class="progress">2/{total}</span>' in page.text
    assert '<td class="num best">0.25</td>' in page.text
    assert 'http-equiv="refresh"' in page.text  # created: the list keeps itself current

    client.cookies.clear()
    bobs = signed_in(client, bob)
    assert "quickstart" not in bobs.get("/ui").text
    assert bobs.get("/ui/studies/quickstart").status_code == 404
    assert bobs.get("/ui/studies/quickstart/report").status_code == 404


def test_the_study_page_lists_trials_escapes_their_errors_and_links_the_report(
        client: TestClient, store: Store) -> None:
    token = store.create_token("ada")
    with_trials(client, store, token)
    page = client.get("/ui/studies/quickstart", headers=auth(token))  # a bearer header works
    assert page.status_code == 200
    assert page.text.count("data-trial=") == 2
    assert '<tr class="best" data-trial="0">' in page.text
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; went wrong" in page.text
    assert 'id="progress-plot"' in page.text
    assert 'href="/ui/studies/quickstart/report"' in page.text
    report = client.get("/ui/studies/quickstart/report", headers=auth(token))
    assert report.status_code == 200 and '<section id="isolation">' in report.text
    csv = client.get("/ui/studies/quickstart/report?format=csv", headers=auth(token))
    assert csv.status_code == 200 and csv.text.count("\n") == 3
    other = client.get("/ui/studies/quickstart/report?format=../../etc/passwd",
                       headers=auth(token))
    assert other.status_code == 404


def test_cancel_is_offered_only_where_studies_run(store: Store, tmp_path: Path) -> None:
    from searchsvc.service.runner import StudyRunner

    token = store.create_token("ada")
    plain = TestClient(create_app(store, ServiceConfig()), follow_redirects=False)
    with_trials(plain, store, token)
    assert 'id="cancel"' not in plain.get("/ui/studies/quickstart", headers=auth(token)).text
    runner = StudyRunner(store)  # never started: cancel acts on the store alone
    running = TestClient(create_app(store, ServiceConfig(), runner), follow_redirects=False)
    queued = running.get("/ui/studies/quickstart", headers=auth(token)).text
    assert 'id="cancel"' in queued
    # The line `searchsvc queue` shows, on the study's page.
    [line] = [s["line"] for s in running.get("/queue", headers=auth(token)).json()["studies"]]
    assert f'<p class="muted" id="share">On the shared cluster: {line}</p>' in queued
    cancelled = running.post("/ui/studies/quickstart/cancel", headers=auth(token))
    assert cancelled.status_code == 303
    assert store.get_study("quickstart").state == "interrupted"
    page = running.get("/ui/studies/quickstart", headers=auth(token)).text
    assert 'id="resume"' in page and 'http-equiv="refresh"' not in page


def test_sign_out_clears_the_cookie(client: TestClient, store: Store) -> None:
    signed_in(client, store.create_token("ada"))
    response = client.post("/ui/logout")
    assert response.status_code == 303 and f'{COOKIE}=""' in response.headers["set-cookie"]


def test_trials_sort_newest_or_best_first_and_long_tables_are_cut(
        client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from searchsvc.service import ui

    token = store.create_token("ada")
    with_trials(client, store, token)  # trial 0: 0.25; trial 1: failed, no value
    newest = client.get("/ui/studies/quickstart", headers=auth(token)).text
    assert newest.index('data-trial="1"') < newest.index('data-trial="0"')
    best = client.get("/ui/studies/quickstart?sort=best", headers=auth(token)).text
    assert best.index('data-trial="0"') < best.index('data-trial="1"')
    assert client.get("/ui/studies/quickstart?sort=evil", headers=auth(token)).status_code == 422

    monkeypatch.setattr(ui, "MAX_TRIAL_ROWS", 1)
    cut = client.get("/ui/studies/quickstart?sort=best", headers=auth(token)).text
    assert cut.count("data-trial=") == 1 and "1 more trials are not shown" in cut


def test_seed_repeats_are_shown_with_the_trial_they_repeat_in_the_ui_and_the_api(
        client: TestClient, store: Store) -> None:
    token = store.create_token("ada")
    with_trials(client, store, token)
    study = store.get_study("quickstart")
    repeat = store.start_trial(study.id, number=2, config={"lr": 0.01}, arm={}, seed=77,
                               repeat_of=0).id
    store.finish_trial(repeat, TrialState.COMPLETED)
    page = client.get("/ui/studies/quickstart", headers=auth(token)).text
    row = page[page.index('data-trial="2"'):].split("</tr>")[0]
    assert 'title="seed 77">#0</td>' in row
    plain = page[page.index('data-trial="1"'):].split("</tr>")[0]
    assert "#0" not in plain
    api = {t["number"]: t for t in client.get("/studies/quickstart/trials",
                                               headers=auth(token)).json()}
    assert (api[2]["repeat_of"], api[2]["seed"], api[0]["repeat_of"]) == (0, 77, None)


def test_a_failed_studys_page_says_why_it_failed(client: TestClient, store: Store) -> None:
    token = store.create_token("ada")
    signed_in(client, token)
    with_trials(client, store, token)
    assert 'id="failure"' not in client.get("/ui/studies/quickstart").text
    store.update_study("quickstart", state="failed",
                       provenance={"failure": "its driver exited with code 1 <3 times>"})
    page = client.get("/ui/studies/quickstart").text
    assert ('<p class="error" id="failure">Why it failed: its driver exited with code 1 '
            "&lt;3 times&gt;</p>") in page


def test_a_failed_trials_row_shows_its_errors_end_and_its_page_the_whole(
        client: TestClient, store: Store) -> None:
    token = store.create_token("ada")
    assert client.post("/studies", content=SPEC, headers=auth(token)).status_code == 201
    study = store.get_study("quickstart")
    trial = store.start_trial(study.id, number=0, config={"lr": 0.5}, arm={}, seed=1).id
    frames = "".join(f'  File "/site-packages/ray/x.py", line {n}, in f\n' for n in range(40))
    error = ("Failure # 1 (occurred at 2026-11-28)\n\x1b[36mray::ImplicitFunc.train()\x1b[39m\n"
             f"Traceback (most recent call last):\n{frames}"
             "searchsvc.worker.command.CommandFailed: command 'python train.py' exited with "
             "code 1:\n  File \"train.py\", line 22, in <module>\n"
             "RuntimeError: diverged at epoch 2")
    store.finish_trial(trial, TrialState.FAILED, error=error)
    page = client.get("/ui/studies/quickstart", headers=auth(token)).text
    cell = page[page.index('<td class="error"'):]
    cell = cell[:cell.index("</td>")]
    assert "RuntimeError: diverged at epoch 2" in cell and "Failure # 1" not in cell.split(">")[-1]
    whole = client.get("/ui/studies/quickstart/trials/0", headers=auth(token)).text
    assert "Failure # 1" in whole and "RuntimeError: diverged at epoch 2" in whole
