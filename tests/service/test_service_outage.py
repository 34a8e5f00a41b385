"""A study the service runs rides through a restart of the service's PostgreSQL: `/health` says
degraded while the database is down, and the study completes with every trial and step once.
Real processes: `searchsvc serve`, its study driver, a private PostgreSQL server."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from searchsvc.core import EventKind, TrialState
from searchsvc.testing.postgres import running_server
from searchsvc.testing.served import running_service
from tests.outages import SPEC, STEPS, TRIALS

pytestmark = pytest.mark.slow


def test_a_study_the_service_runs_rides_through_a_database_restart(tmp_path: Path) -> None:
    with running_server() as server, running_service(tmp_path, storage=server.url) as service:
        assert service.call("GET", "/health")["status"] == "ok"
        service.call("POST", "/studies?preflight=false", SPEC.format(name="steady"))
        service.wait_for_completed_trials("steady", 2)
        server.stop()
        try:
            health = service.call("GET", "/health")
            assert health["status"] == "degraded", health
            assert health["store"].startswith("unreachable: "), health
            time.sleep(2.0)  # the driver's trials go on meanwhile
        finally:
            server.start()
        assert service.call("GET", "/health") == {
            "status": "ok", "version": health["version"], "store": "ok",
            "cluster": "1 node(s): 2 CPUs, 0 GPUs in all"}
        study = service.wait_for("steady", "completed")
        assert study["trial_counts"] == {"completed": TRIALS}
        trials = service.store.get_trials("steady", measurements=True)
        assert [t.number for t in trials] == list(range(TRIALS))
        for t in trials:
            assert t.state == TrialState.COMPLETED and t.attempts == 1
            assert [m.step for m in t.measurements] == list(range(1, STEPS + 1))
        # the driver met the outage and rode through it (not merely idle while it lasted)
        assert service.store.get_events("steady", kind=EventKind.STORE_OUTAGE)
