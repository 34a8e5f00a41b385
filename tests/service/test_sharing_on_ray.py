"""Two users share the service's one Ray (`searchsvc serve` with its default number of studies
at once, 2 CPUs): alice's big study runs on both CPUs; bob submits a small one while it runs and
gets a slot when one of alice's trials ends, instead of waiting for her study to end. Checked on
the allocator's logged decisions and on the order the store recorded, not on durations.
A service killed (with its drivers and its Ray) while a study of higher priority holds a slot
one of alice's trials gave up at a checkpoint: restarted, it resumes both studies, and the
paused trial goes on from that checkpoint with every step stored once.
On a cluster with GPUs (logical ones), a user whose quota is 1 GPU runs one GPU trial at a time
while another user's study takes the other GPU."""

from __future__ import annotations

import itertools
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchsvc.core import EventKind, TrialState
from searchsvc.driver.head import processes_naming
from searchsvc.service.sharing import read_events
from searchsvc.store import SqlStore
from searchsvc.testing.loopback import LoopbackCluster
from searchsvc.testing.served import (
    CHECKPOINTED_STUDY,
    GPU_STUDY,
    TIMED_STUDY,
    running_service,
)
from searchsvc.usecases import stop_ray_head

pytestmark = pytest.mark.slow


def test_a_small_study_gets_a_slot_when_a_big_ones_trial_ends(tmp_path: Path) -> None:
    with running_service(tmp_path, user="alice") as service:
        bob = service.store.create_token("bob")
        submit = "/studies?preflight=false"
        # More trials than alice's study can run before it is cancelled, however long bob's
        # driver takes to start on a busy machine: hers is still running when his ends.
        service.call("POST", submit, TIMED_STUDY.format(name="big", trials=1000, step_s=0.4))
        service.wait_for_completed_trials("big", 2)
        service.call("POST", submit, TIMED_STUDY.format(name="small", trials=2, step_s=0.4),
                     token=bob)
        service.wait_for("small", "completed", token=bob)
        gone = allowance_once_gone(service.home / "allowances", "small")
        started_after(service.store, "big", last_finish(service.store, "small"))
        service.call("POST", "/studies/big/cancel")
        service.wait_for("big", "interrupted", timeout=120)
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
    assert events.index(gone) > events.index(arrival)
    assert gone["studies"]["big"]["allowance"] == 2, gone  # she still wants 2
    # bob's driver was told, with why.
    assert ("shared cluster: this study may run 1 trial(s) at once (1 of 2 slot(s) while 1 "
            "other user(s) have studies running)") in log

    # Ray ran bob's trials while alice still had trials to start: his study ended before her
    # last trial began.
    big = service.store.get_trials("big")
    small = service.store.get_trials("small")
    assert 2 < len(big) < 1000 and len(small) == 2
    assert last_finish(service.store, "small") < last_start(service.store, "big")


def last_finish(store: SqlStore, study: str) -> float:
    return max(t.finished_at or 0 for t in store.get_trials(study))


def last_start(store: SqlStore, study: str) -> float:
    return max(t.started_at or 0 for t in store.get_trials(study))


def started_after(store: SqlStore, study: str, moment: float, timeout_s: float = 60) -> None:
    """Wait until a trial of ``study`` has started after ``moment``: a study with trials left
    to start takes the slots another study gave back."""
    deadline = time.time() + timeout_s
    while last_start(store, study) <= moment:
        assert time.time() < deadline, f"no trial of {study} started after {moment}"
        time.sleep(0.2)


def allowance_once_gone(folder: Path, study: str, timeout_s: float = 60) -> dict:
    """The allocator's first decision after ``study`` arrived and then ended."""
    deadline = time.time() + timeout_s
    while True:
        events = read_events(folder)
        arrived = [i for i, e in enumerate(events) if study in e["studies"]]
        later = [e for e in events[arrived[0]:] if study not in e["studies"]] if arrived else []
        if later:
            return later[0]
        assert time.time() < deadline, f"no decision after {study} ended: {events}"
        time.sleep(0.2)


# 8 steps a trial: a trial pauses before it ends
CHECKPOINTED = CHECKPOINTED_STUDY.replace("max_steps: 4", "max_steps: 8")


def test_a_service_killed_during_a_preemption_resumes_the_paused_trials_from_their_checkpoints(
        tmp_path: Path) -> None:
    with running_service(tmp_path, user="alice") as service:
        bob = service.store.create_token("bob", max_priority=5)
        service.call("POST", "/studies?preflight=false",
                     CHECKPOINTED.format(name="low", trials=2, step_s=0.5))
        deadline = time.time() + 240
        while sum(t.state == TrialState.RUNNING and (t.last_step or 0) >= 1
                  for t in service.store.get_trials("low")) < 2:
            assert time.time() < deadline, "alice's study never ran both trials"
            time.sleep(0.2)
        # bob's 2 trials of 4 steps of 2 s take both slots for at least 8 s: each of alice's
        # trials pauses at its next checkpoint, unless it ends first
        service.call("POST", "/studies?preflight=false&priority=5",
                     TIMED_STUDY.format(name="high", trials=2, step_s=2.0), token=bob)

        def paused() -> dict[int, int]:
            return {e.number: e.step for e in service.store.get_events(
                "low", kind=EventKind.PAUSED)}

        while not paused() or any(t.state != TrialState.COMPLETED and t.number not in paused()
                                  for t in service.store.get_trials("low")):
            assert time.time() < deadline, "alice's trials were never paused"
            time.sleep(0.1)
        pauses = paused()
        assert any("low" in e["preempted"] for e in read_events(service.home / "allowances"))
        service.kill()  # the service, its drivers and its Ray: a lost machine
        for driver in processes_naming(service.url_db):  # bob's may not have recorded its pid
            os.killpg(driver.pid, signal.SIGKILL)
        stop_ray_head(service.home)
        before = {t.number: t for t in service.store.get_trials("low", measurements=True)}
        for number, step in pauses.items():  # still paused at the kill
            assert before[number].state != TrialState.COMPLETED
            assert before[number].last_step == step

        service.start()
        service.wait_for("high", "completed", token=bob)
        service.wait_for("low", "completed")
        after = {t.number: t for t in service.store.get_trials("low", measurements=True)}
        saved: dict[tuple[int, int], list[int]] = {}  # (trial, attempt): checkpointed steps
        for e in service.store.get_events("low", kind=EventKind.CHECKPOINT):
            saved.setdefault((e.number, e.data["attempt"]), []).append(e.step)

    assert all(t.state == TrialState.COMPLETED for t in after.values())
    for t in after.values():  # no step lost, none run twice
        assert [m.step for m in t.measurements if m.attempt == t.attempts] == list(range(1, 9))
    for number, step in pauses.items():
        # It went on from its checkpoint: the objective saves one at every step it runs, and
        # after the restart it saved none up to the pause.
        assert after[number].attempts == 2
        assert saved[number, 1][-1] == step and saved[number, 2] == list(range(step + 1, 9))


@pytest.fixture
def gpu_cluster(tmp_path: Path) -> Iterator[LoopbackCluster]:
    """A head that runs nothing and one worker node with 2 CPUs and 2 (logical) GPUs."""
    c = LoopbackCluster(tmp_path / "ray-home").start()
    try:
        c.add_worker(cpus=2, gpus=2)
        yield c
    finally:
        c.stop()


def test_a_user_with_a_quota_of_1_gpu_never_holds_2(tmp_path: Path,
                                                     gpu_cluster: LoopbackCluster) -> None:
    with running_service(tmp_path, user="alice", args=["--address", gpu_cluster.address],
                         env=gpu_cluster.env) as service:
        service.store.set_quota("alice", {"GPU": 1.0})
        service.call("POST", "/studies?preflight=false",
                     GPU_STUDY.format(name="capped", trials=4, step_s=0.3))
        service.wait_for("capped", "completed")
        events = read_events(service.home / "allowances")
        capped = service.store.get_trials("capped")

    # Alone on a cluster with 2 GPUs free, alice's study was allowed 1 trial (1 GPU) at once,
    # never 2 ...
    decided = [e["studies"]["capped"] for e in events if "capped" in e["studies"]]
    assert {e["capacity"]["GPU"] for e in events if "capped" in e["studies"]} == {2.0}
    assert decided and {d["allowance"] for d in decided} == {1}, decided
    assert max(d["running"] for d in decided) == 1
    # ... and her trials ran one after another.
    assert [t.state for t in capped] == [TrialState.COMPLETED] * 4
    spans = sorted((t.started_at or 0, t.finished_at or 0) for t in capped)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), spans
