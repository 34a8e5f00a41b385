"""The service runs what users submit: a study submitted over HTTP runs to completion (and
reads in Python through the service as from its store), cancel stops it, and a service killed
outright (with its drivers) resumes its studies on restart with every trial accounted for once.
Every study runs on the one Ray the service started, which outlives the service: a restarted
service attaches to it, or starts a new one when it is gone. Real processes: `searchsvc serve`,
its Ray and its study drivers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import searchsvc
from searchsvc.core import TrialState
from searchsvc.driver.head import read_head
from searchsvc.testing.served import SPEC, Service, running_service
from searchsvc.usecases import stop_ray_head

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One service (and its Ray) for the studies that can share it: each has a name of its
    own, and starting a service with its Ray head is most of a short test's cost."""
    with running_service(tmp_path_factory.mktemp("service")) as s:
        yield s


def test_a_study_submitted_with_the_cli_runs_and_its_report_downloads(service: Service,
                                                                        tmp_path: Path) -> None:
    spec = tmp_path / "served.yaml"
    spec.write_text(SPEC.format(name="served", trials=6))
    env = {**os.environ, "SEARCHSVC_SERVER": f"http://127.0.0.1:{service.port}",
           "SEARCHSVC_TOKEN": service.token}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "searchsvc.cli", *args], env=env,
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)

    submitted = cli("submit", str(spec))
    assert submitted.returncode == 0 and "served: created" in submitted.stdout, submitted
    study = service.wait_for("served", "completed")
    assert study["trial_counts"] == {"completed": 6}
    # The service's driver preflighted it before its first trial.
    checks = service.store.get_study("served").provenance["preflight"]["checks"]
    assert checks and all(c["ok"] is not False for c in checks)
    assert "served: completed · 6 completed of 6" in cli("status", "served").stdout
    trials = service.call("GET", "/studies/served/trials?curves=true")
    assert all(len(t["measurements"]) == 6 for t in trials)
    downloaded = cli("report", "served", "--out", str(tmp_path / "report"))
    assert downloaded.returncode == 0, downloaded.stderr
    html = (tmp_path / "report" / "report.html").read_text()
    assert '<section id="isolation">' in html and "served" in html
    assert (tmp_path / "report" / "trials.csv").read_text().count("\n") == 7
    again = cli("submit", str(spec))
    assert again.returncode == 4 and "already exists" in again.stderr
    other = cli("status", "nope")
    assert other.returncode == 3

    # In Python, the study reads through the service as from the service's store, and its
    # DataFrame is the trials.csv the service wrote.
    remote = searchsvc.load("served", server=service.url, token=service.token)
    local = searchsvc.load("served", storage=service.url_db)
    frame = remote.trials_dataframe()
    pd.testing.assert_frame_equal(frame, local.trials_dataframe())
    pd.testing.assert_frame_equal(frame, pd.read_csv(tmp_path / "report" / "trials.csv"),
                                  check_dtype=False)
    assert [(t.number, t.best_value) for t in remote.best_trials] == [
        (t.number, t.best_value) for t in local.best_trials] and len(remote.best_trials) == 6
    pd.testing.assert_frame_equal(remote.measurements(), local.measurements())
    assert len(remote.measurements().query("metric == 'val_loss'")) == 6 * 6
    assert remote.next_study() == local.next_study()


def test_cancel_stops_a_running_study_and_resume_runs_it_again(service: Service) -> None:
    # Started without preflight, as `searchsvc submit --no-preflight` asks.
    service.call("POST", "/studies?preflight=false", SPEC.format(name="long", trials=400))
    service.wait_for_completed_trials("long", 4)
    skipped = service.store.get_study("long").provenance["preflight"]
    assert "checks" in skipped and not skipped["checks"] and "--no-preflight" in skipped["skipped"]
    service.call("POST", "/studies/long/cancel")
    stopped = service.wait_for("long", "interrupted", timeout=60)
    done = stopped["trial_counts"].get("completed", 0)
    assert 4 <= done < 400
    assert service.call("POST", "/studies/long/resume")["state"] in ("created", "running")
    service.wait_for_completed_trials("long", done + 2)  # a new driver picked it up
    service.call("POST", "/studies/long/cancel")
    service.wait_for("long", "interrupted", timeout=60)


def _nodes(service: Service, *studies: str) -> set[str]:
    """The Ray nodes the studies' finished trials ran on, as the store names them."""
    return {t.node or "" for name in studies for t in service.store.get_trials(name)
            if t.state == TrialState.COMPLETED}


def test_a_killed_service_resumes_its_studies_with_every_trial_once(tmp_path: Path) -> None:
    args = ("--num-cpus", "2", "--driver-niceness", "0", "--max-running", "2")
    with running_service(tmp_path, args=args) as service:
        service.call("POST", "/studies?preflight=false", SPEC.format(name="other", trials=2))
        service.wait_for("other", "completed")
        # Enough trials that the kill comes before the last (each takes milliseconds).
        service.call("POST", "/studies?preflight=false", SPEC.format(name="survivor", trials=100))
        service.wait_for_completed_trials("survivor", 6)
        driver = service.store.get_study("survivor").driver
        head = read_head(service.home)
        assert head is not None and head.answers()
        service.kill()  # the service, then its driver and its Ray: a lost machine
        os.killpg(int(driver["pid"]), signal.SIGKILL)
        stop_ray_head(service.home)
        before = {t.number: t for t in service.store.get_trials("survivor")
                  if t.state == TrialState.COMPLETED}
        assert 6 <= len(before) < 100
        # Both studies' drivers attached to the service's one Ray, started once.
        [node] = _nodes(service, "other")
        assert " node " in node and _nodes(service, "survivor") == {node}

        service.start()
        service.wait_for("survivor", "completed")
        after = {t.number: t for t in service.store.get_trials("survivor", measurements=True)}
        assert sorted(after) == list(range(100))
        assert all(t.state == TrialState.COMPLETED for t in after.values())
        for number, old in before.items():  # finished before the kill: kept, not run again
            assert (after[number].attempts, after[number].finished_at) == (1, old.finished_at)
        for t in after.values():
            assert [m.step for m in t.measurements if m.attempt == t.attempts] == list(
                range(1, 7))
        restarted = read_head(service.home)  # its Ray was gone: the restarted service started one
        # a new head: a new token (its port may be the old one's, free again)
        assert restarted is not None and restarted.token != head.token
        later = {t.node for t in after.values() if t.number not in before}
        assert later and node not in later
