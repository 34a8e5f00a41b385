"""The service's allocator on records built directly (no Ray, no driver): each study's claim
comes from its study file and counts, allowances are decided only when something changes,
written where the drivers read them, and logged with what changed."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

from searchsvc.allocation.allowance import Allowance, AllowanceReader
from searchsvc.core import StudyRecord, StudyState
from searchsvc.service.sharing import (
    ClusterShares,
    holding_of,
    queue_view,
    read_events,
    share_line,
)

SPEC = """
study: {name}
objective: objectives.toy:train
metric: loss
mode: min
budget: {{trials: {trials}, max_concurrent: {concurrent}}}
resources: {{cpu: {cpu}, gpu: {gpu}}}
parameters:
  x: {{role: nuisance, low: 0.0, high: 1.0}}
"""


def study(name: str, owner: str, *, trials: int = 10, concurrent: int = 2, cpu: float = 1,
          gpu: float = 0, running: int = 0, completed: int = 0, created: float = 0.0
          ) -> StudyRecord:
    text = textwrap.dedent(SPEC.format(name=name, trials=trials, concurrent=concurrent,
                                       cpu=cpu, gpu=gpu))
    counts = {k: v for k, v in (("running", running), ("completed", completed)) if v}
    return StudyRecord(id=hash(name) % 1000, name=name, state=StudyState.RUNNING, metric="loss",
                       mode="min", searcher="quasi_random", spec_text=text,
                       spec_file=f"{name}.yaml", created_at=created, total_trials=trials,
                       owner=owner, trial_counts=counts)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_claim_is_read_from_the_study_file_and_its_counts() -> None:
    held = holding_of(study("a", "alice", trials=10, concurrent=4, cpu=2, gpu=0.5,
                            running=3, completed=8))
    assert held.claim.per_trial == {"CPU": 2.0, "GPU": 0.5}
    assert held.claim.wants == 2  # 2 trials left, though 4 may run at once
    assert held.running == 3 and held.held == {"CPU": 6.0, "GPU": 1.5}
    assert held.claim.user == "alice"


def test_a_second_user_gets_half_and_the_first_drivers_file_says_so(tmp_path: Path) -> None:
    clock = Clock()
    shares = ClusterShares(tmp_path, clock=clock)
    capacity = {"CPU": 2.0, "GPU": 0.0}
    big = study("big", "alice", trials=24, running=2, created=1.0)
    shares.update([big], capacity)
    assert shares.allowances == {"big": 2}
    alice = AllowanceReader(shares.file_for("big"))
    assert alice() == Allowance(2, "")

    clock.now += 3
    small = study("small", "bob", trials=2, created=2.0)
    shares.update([big, small], capacity)
    assert shares.allowances == {"big": 1, "small": 1}
    assert alice() == Allowance(1, "1 of 2 slot(s) while 1 other user(s) have studies running")
    assert AllowanceReader(shares.file_for("small"))()[0] == 1  # type: ignore[index]

    # Nothing changed: no new decision, however often the service asks.
    clock.now += 1
    shares.update([big, small], capacity)
    events = read_events(tmp_path)
    assert len(events) == 2
    assert events[1]["changed"] == {"big": [2, 1], "small": [None, 1]}
    assert events[1]["studies"]["big"] == {"user": "alice", "wants": 2, "running": 2,
                                           "allowance": 1}
    assert events[1]["used"] == {"alice": 3.0}  # 3 s holding both CPUs: a dominant share of 1

    # bob's study ends: alice gets both slots again and bob's file goes.
    clock.now += 5
    shares.update([study("big", "alice", trials=24, running=1, completed=5, created=1.0)],
                  capacity)
    assert shares.allowances == {"big": 2}
    assert not shares.file_for("small").exists()
    assert read_events(tmp_path)[-1]["changed"] == {"big": [1, 2]}


def test_a_higher_priority_asks_the_lower_to_pause_at_checkpoints_until_it_runs(
        tmp_path: Path) -> None:
    capacity = {"CPU": 2.0, "GPU": 0.0}
    low = study("low", "alice", trials=24, running=2, created=1.0)
    high = dataclasses.replace(study("high", "bob", trials=2, created=2.0),
                               provenance={"priority": 5})
    shares = ClusterShares(tmp_path)
    shares.update([low, high], capacity)
    assert shares.allowances == {"low": 0, "high": 2}
    assert AllowanceReader(shares.file_for("low"))().preempt  # type: ignore[union-attr]
    assert not AllowanceReader(shares.file_for("high"))().preempt  # type: ignore[union-attr]
    assert read_events(tmp_path)[-1]["preempted"] == ["low"]
    # alice's trials paused and bob's run: nothing more to give back, though the numbers stay
    running_high = dataclasses.replace(high, trial_counts={"running": 2})
    shares.update([dataclasses.replace(low, trial_counts={}), running_high], capacity)
    assert shares.allowances == {"low": 0, "high": 2}
    assert not AllowanceReader(shares.file_for("low"))().preempt  # type: ignore[union-attr]
    assert read_events(tmp_path)[-1]["preempted"] == []
    # with preemption off, alice's trials finish first: nobody is asked to pause
    calm = ClusterShares(tmp_path / "calm", preemption=False)
    calm.update([low, high], capacity)
    assert calm.allowances == {"low": 0, "high": 2}
    assert not AllowanceReader(calm.file_for("low"))().preempt  # type: ignore[union-attr]


def test_nothing_is_decided_before_the_cluster_is_known(tmp_path: Path) -> None:
    shares = ClusterShares(tmp_path)
    shares.update([study("a", "alice")], None)
    assert shares.allowances == {} and read_events(tmp_path) == []
    assert AllowanceReader(shares.file_for("a"))() is None  # the driver runs unlimited


def test_the_queue_shows_a_user_their_own_studies_and_others_only_as_load(
        tmp_path: Path) -> None:
    shares = ClusterShares(tmp_path)
    big = study("big", "alice", trials=24, running=2, created=1.0)
    small = study("small", "bob", trials=2, created=2.0)
    later = study("later", "alice", trials=4, created=3.0)
    shares.update([big, small], {"CPU": 2.0, "GPU": 0.0})
    view = queue_view("alice", [big, small, later], driven={"big", "small"}, shares=shares,
                      max_running=2, capacity={"CPU": 2.0, "GPU": 0.0})
    assert view["other_users"] == 1 and view["cluster"] == {"CPU": 2.0, "GPU": 0.0}
    assert view["studies"] == [
        {"name": "big", "state": "running", "priority": 0, "running": 2, "wants": 2,
         "allowance": 1, "position": None,
         "line": "runs up to 1 trial(s) at once: 1 of 2 slot(s) while 1 other user(s) have "
                 "studies running"},
        {"name": "later", "state": "running", "priority": 0, "running": 0, "wants": 2,
         "allowance": None, "position": 1,
         "line": "queued: 0 studies ahead of it; the service drives 2 at once"}]
    # bob's study as load: no name, no user.
    assert view["others"] == [{"priority": 0, "per_trial": {"CPU": 1.0, "GPU": 0.0},
                               "running": 0, "allowance": 1}]
    assert "bob" not in json.dumps(view) and "small" not in json.dumps(view)


def test_a_study_with_no_slot_says_it_waits_for_its_share(tmp_path: Path) -> None:
    shares = ClusterShares(tmp_path)
    users = [study(name, name, trials=8, created=i) for i, name in
             enumerate(("alice", "bob", "carol"))]
    shares.update(users, {"CPU": 2.0})
    [waiting] = [s for s in users if shares.allowances[s.name] == 0]
    assert share_line(waiting, shares=shares, driven=True, ahead=0, max_running=4) == (
        "waiting for a slot: your share is 0 of 2 slot(s) while 2 other user(s) have studies "
        "running")


def test_a_quota_caps_a_user_on_an_idle_cluster_and_says_so(tmp_path: Path) -> None:
    shares = ClusterShares(tmp_path)
    capacity = {"CPU": 8.0, "GPU": 4.0}
    first = study("first", "alice", trials=8, concurrent=4, gpu=1, created=1.0)
    second = study("second", "alice", trials=8, concurrent=4, gpu=1, created=2.0)
    shares.update([first, second], capacity, {"alice": {"GPU": 1.0}})
    assert shares.allowances == {"first": 1, "second": 0}
    line = {s.name: share_line(s, shares=shares, driven=True, ahead=0, max_running=4)
            for s in (first, second)}
    assert line == {"first": "runs up to 1 trial(s) at once: your quota of 1 GPU is in use",
                    "second": "waiting: your quota of 1 GPU is in use"}
    # The admin raises the quota: a new decision, though no study changed.
    shares.update([first, second], capacity, {"alice": {"GPU": 3.0}})
    assert shares.allowances == {"first": 2, "second": 1}
    assert len(read_events(tmp_path)) == 2
