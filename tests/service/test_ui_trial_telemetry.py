"""The web UI's trial page: a trial's config, error and the telemetry of every step, with the
absent GPU stated as absent; another user's trial is not found."""

from __future__ import annotations

from fastapi.testclient import TestClient

from searchsvc.core import TrialState
from searchsvc.store import Store
from tests.service.test_api import SPEC, auth
from tests.service.test_ui import client, store  # noqa: F401  (fixtures)


def test_the_trial_page_shows_every_steps_telemetry(client: TestClient, store: Store  # noqa: F811
                                                    ) -> None:
    token, other = store.create_token("ada"), store.create_token("bob")
    assert client.post("/studies", content=SPEC, headers=auth(token)).status_code == 201
    study = store.get_study("quickstart")
    trial = store.start_trial(study.id, number=0, config={"lr": 0.01}, arm={}, seed=1).id
    telemetry = [{"step_time_s": 0.5 + step, "samples": 64, "samples_per_s": 128.0 / (1 + step),
                  "data_wait_fraction": 0.75, "data_wait_s": 0.4, "cpu_percent": 97.5,
                  "rss_mb": 412.0, "gpu": "none assigned"} for step in (1, 2)]
    store.record_measurements(trial, 1, study.mode, [
        (1, 0.5, {study.metric: 0.5}, telemetry[0]), (2, 0.25, {study.metric: 0.25},
                                                      telemetry[1])])
    store.finish_trial(trial, TrialState.COMPLETED)
    study_page = client.get("/ui/studies/quickstart", headers=auth(token))
    assert 'href="/ui/studies/quickstart/trials/0"' in study_page.text
    page = client.get("/ui/studies/quickstart/trials/0", headers=auth(token))
    assert page.status_code == 200
    assert page.text.count("<tr><td class=\"num\">") == 2  # one row per step
    assert "step_time_s" in page.text and "1.5" in page.text and "2.5" in page.text
    assert "412" in page.text and "97.5" in page.text
    assert 'id="gpu-absent">not measured (gpu: none assigned)' in page.text
    assert "gpu_util_mean" not in page.text
    assert "lr" in page.text and "0.01" in page.text
    assert client.get("/ui/studies/quickstart/trials/7", headers=auth(token)).status_code == 404
    assert client.get("/ui/studies/quickstart/trials/0", headers=auth(other)).status_code == 404
