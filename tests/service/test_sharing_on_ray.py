"""Two users share the service's one Ray (`searchsvc serve` with its default number of studies
at once, 2 CPUs): alice's big study runs on both CPUs; bob submits a small one while it runs and
gets a slot when one of alice's trials ends, instead of waiting for her study to end. Checked on
the allocator's logged decisions and on the order the store recorded, not on durations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchsvc.service.sharing import read_events
from searchsvc.testing.served import TIMED_STUDY, running_service

pytestmark = pytest.mark.slow



def test_a_small_study_gets_a_slot_when_a_big_ones_trial_ends(tmp_path: Path) -> None:
    with running_service(tmp_path, user="alice") as service:
        bob = service.store.create_token("bob")
        submit = "/studies?preflight=false"
        service.call("POST", submit, TIMED_STUDY.format(name="big", trials=16, step_s=0.4))
        service.wait_for_completed_trials("big", 2)
        service.call("POST", submit, TIMED_STUDY.format(name="small", trials=2, step_s=0.4),
                     token=bob)
        service.wait_for("small", "completed", token=bob)
        service.wait_for("big", "completed")
        events = read_events(service.home / "allowances")
        log = (service.home / "service-logs" / "small.log").read_text()

    # The allocator's decisions: alice alone had both slots; bob's arrival halved them; once
    # bob's study ended alice had both again.
    first = next(e for e in events if e["studies"])
    assert first["studies"]["big"]["allowance"] == 2, events
    [arrival] = [e for e in events if "small" in e["changed"] and e["changed"]["small"][0] is None]
    assert arrival["changed"]["big"] == [2, 1], arrival
    assert arrival["studies"]["small"] == {"user": "bob", "wants": 2, "running": 0,
                                           "allowance": 1}
    later = events[events.index(arrival) + 1:]
    gone = next(e for e in later if "small" not in e["studies"])
    assert gone["studies"]["big"]["allowance"] == 2, json.dumps(later, indent=1)
    # bob's driver was told, with why.
    assert ("shared cluster: this study may run 1 trial(s) at once (1 of 2 slot(s) while 1 "
            "other user(s) have studies running)") in log

    # Ray ran bob's trials while alice still had trials to start: his study ended before her
    # last trial began.
    big = service.store.get_trials("big")
    small = service.store.get_trials("small")
    assert len(big) == 16 and len(small) == 2
    assert max(t.finished_at or 0 for t in small) < max(t.started_at or 0 for t in big)
