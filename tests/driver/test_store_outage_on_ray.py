"""A study rides through its database going away: restarted mid-study, the study completes with
every trial and every reported step stored once, and the outage is in the report; down longer
than the window, the run stops with exit code 7 and a resume completes it with nothing lost.
A private PostgreSQL server of the test's own, restarted as an operator would (pg_ctl -m fast).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from searchsvc.analysis import analyze
from searchsvc.core import STUDY_EVENT, EventKind, TrialState
from searchsvc.driver import RunOptions, create_study, run_study
from searchsvc.errors import StoreError
from searchsvc.searchers import create_searcher
from searchsvc.spec import parse_spec
from searchsvc.store import SqlStore
from searchsvc.testing.postgres import PrivateServer, running_server
from searchsvc.usecases import validate_text
from tests.outages import SPEC, STEPS, TRIALS

pytestmark = pytest.mark.slow


@pytest.fixture
def server() -> Iterator[PrivateServer]:
    with running_server() as found:
        yield found


def when_completed(url: str, at_least: int, then: Callable[[], None]) -> threading.Thread:
    """A thread that runs ``then`` once ``at_least`` trials of the study completed."""
    def watch() -> None:
        store = SqlStore(url, outage_s=60)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                done = sum(t.state == TrialState.COMPLETED for t in store.get_trials("outage"))
            except Exception:  # not created yet
                done = 0
            if done >= at_least:
                break
            time.sleep(0.1)
        store.close()
        then()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def run(store: SqlStore, *, create: bool) -> None:
    spec = validate_text(SPEC.format(name="outage"), file="outage.yaml")
    options = RunOptions(live_progress=False)
    searcher = create_searcher(spec)  # a fresh one for each run, as a resume makes
    if create:
        create_study(spec, store, options, searcher=searcher)
    run_study("outage", store, options, searcher=searcher)


def check_every_step_once(store: SqlStore) -> None:
    trials = store.get_trials("outage", measurements=True)
    assert [t.number for t in trials] == list(range(TRIALS))
    for t in trials:
        assert t.state == TrialState.COMPLETED, (t.number, t.error)
        # the attempt that completed reported steps 1..STEPS, each stored exactly once
        assert [m.step for m in t.measurements if m.attempt == t.attempts] == list(
            range(1, STEPS + 1)), t.number


def test_a_study_rides_through_a_database_restart(ray_local, server: PrivateServer) -> None:
    store = SqlStore(server.url, outage_s=120)
    restart = when_completed(server.url, 2, lambda: server.restart(3.0))
    run(store, create=True)
    restart.join(timeout=60)
    assert store.get_study("outage").state == "completed"
    check_every_step_once(store)
    assert all(t.attempts == 1 for t in store.get_trials("outage"))  # no trial ran twice
    [outage] = store.get_events("outage", kind=EventKind.STORE_OUTAGE)
    assert outage.number == STUDY_EVENT and outage.data["seconds"] >= 1.0
    record = store.get_study("outage")
    findings = analyze(record, parse_spec(record.spec_text),
                       store.get_trials("outage", measurements=True),
                       store.get_events("outage")).findings
    assert any("store was unreachable once" in f for f in findings), findings


def test_an_outage_past_the_window_stops_the_run_and_resume_completes_it(
        ray_local, server: PrivateServer) -> None:
    store = SqlStore(server.url, outage_s=30)  # a server just started may still refuse a moment
    store.outage.window_s = 2
    stop = when_completed(server.url, 2, server.stop)
    with pytest.raises(StoreError) as stopped:
        run(store, create=True)
    stop.join(timeout=60)
    assert stopped.value.exit_code == 7 and "still failing after 2 s" in str(stopped.value)
    server.start()
    kept = {t.number: [m.step for m in t.measurements]
            for t in store.get_trials("outage", measurements=True)
            if t.state == TrialState.COMPLETED}
    assert len(kept) >= 2
    run(SqlStore(server.url), create=False)  # what `searchsvc resume` does
    check_every_step_once(store)
    for t in store.get_trials("outage", measurements=True):  # finished before: kept as it was
        if t.number in kept:
            assert [m.step for m in t.measurements] == kept[t.number] and t.attempts == 1
