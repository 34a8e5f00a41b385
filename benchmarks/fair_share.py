"""Fair share: users of one service on one Ray, with the service's allocator.

A real ``searchsvc serve --num-cpus 2`` (its own Ray head on loopback, drivers at the caller's
priority) and real tokens, one per user. Every study is the same user's objective:
``objectives.synthetic:noisy`` with 4 steps of ``--step-s`` seconds (1 s by default), one CPU a
trial, two at a time.

(a) Head of line. The service is warmed with one small study (its Ray started). Then bob's
    2-trial study runs alone: the time from submission to completion is his *alone* time. Then
    alice submits a 24-trial study and bob, 3 s later, another 2-trial one: the ratio of his
    time to his alone time is the figure (target: at most 2).
(b) Three users submit equal studies (``--big`` trials each) a second apart. From the store's
    trial start and end times, each user's dominant-resource-seconds (here CPU-seconds over 2
    CPUs) in every 60 s window from the moment the third study is submitted until the first
    study ends (the last window may be shorter); Jain's index over the three users per window
    (target: at least 0.95 in each).
(c) Priority. alice's 12-trial study, whose trials save a checkpoint at every step, holds both
    CPUs (both past their first step); bob submits a 2-trial study at priority 5. From the
    allocator's log and the store: the time from the decision that asks alice's study to give
    slots back to her last trial's pause (target: within one checkpoint interval, a step) and
    to the start of bob's first trial (which also waits for his driver to start); every trial
    of alice's paused
    (``paused`` events) resumes and completes, and every step of every trial is stored once.

(d) Quota. A real Ray cluster on loopback (``ray start``: a head and a node with 4 CPUs and 4
    logical GPUs, token authentication) and ``searchsvc serve --address`` attached to it.
    alice's quota is 1 GPU; she submits two studies of GPU trials (1 GPU and 1 CPU a trial, two
    at a time) and bob one. From the store's trial start and end times: the most GPUs each user
    held at once (target for alice: 1, never 2), and from the allocator's log the most trials
    it allowed her studies at once.

Repeated ``--repeats`` times, each on a fresh service; prints a table per scenario and with
``--json FILE`` writes every figure.

    .venv/bin/python benchmarks/fair_share.py [--repeats 2] [--step-s 1.0] [--big 12]
        [--only a|b|c|d] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchsvc.allocation import jain_index  # noqa: E402
from searchsvc.core import EventKind, TrialState  # noqa: E402
from searchsvc.service.sharing import read_events  # noqa: E402
from searchsvc.testing.loopback import LoopbackCluster  # noqa: E402
from searchsvc.testing.served import (  # noqa: E402
    CHECKPOINTED_STUDY,
    GPU_STUDY,
    TIMED_STUDY,
    Service,
    running_service,
)

WINDOW_S = 60.0
CPUS = 2.0


def submit(service: Service, name: str, trials: int, step_s: float, token: str) -> float:
    service.call("POST", "/studies?preflight=false",
                 TIMED_STUDY.format(name=name, trials=trials, step_s=step_s), token=token)
    return time.time()


def wait_done(service: Service, name: str, token: str, timeout: float = 900) -> float:
    deadline = time.time() + timeout
    while time.time() < deadline:
        study = service.call("GET", f"/studies/{name}", token=token)
        if study["state"] in ("completed", "failed", "interrupted"):
            assert study["state"] == "completed", study
            return time.time()
        time.sleep(0.2)
    raise TimeoutError(f"{name} did not end in {timeout:g} s")


def head_of_line(step_s: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, running_service(Path(tmp), user="alice") as s:
        bob = s.store.create_token("bob")
        submit(s, "warm", 2, 0.0, bob)  # the service's Ray starts with its first study
        wait_done(s, "warm", bob)
        started = submit(s, "bob-alone", 2, step_s, bob)
        alone = wait_done(s, "bob-alone", bob) - started
        submit(s, "alice-big", 24, step_s, s.token)
        time.sleep(3.0)
        started = submit(s, "bob-small", 2, step_s, bob)
        shared = wait_done(s, "bob-small", bob) - started
        big_left = 24 - s.call("GET", "/studies/alice-big")["trial_counts"].get("completed", 0)
        wait_done(s, "alice-big", s.token)
    return {"alone_s": alone, "with_big_s": shared, "ratio": shared / alone,
            "big_trials_left_when_small_ended": big_left}


def three_users(step_s: float, big: int) -> dict[str, Any]:
    users = ("alice", "bob", "carol")
    with tempfile.TemporaryDirectory() as tmp, running_service(Path(tmp), user="alice") as s:
        tokens = {"alice": s.token, **{u: s.store.create_token(u) for u in users[1:]}}
        submit(s, "warm", 2, 0.0, s.token)
        wait_done(s, "warm", s.token)
        for user in users:
            all_in = submit(s, f"{user}-big", big, step_s, tokens[user])
            time.sleep(1.0)
        for user in users:
            wait_done(s, f"{user}-big", tokens[user])
        events = read_events(s.home / "allowances")
        spans = {u: [(t.started_at or 0.0, t.finished_at or 0.0)
                     for t in s.store.get_trials(f"{u}-big")] for u in users}
    found = fairness(spans, all_in)
    zero = min(a for s in spans.values() for a, _ in s)
    found["spans"] = {u: sorted((round(a - zero, 2), round(b - zero, 2)) for a, b in s)
                      for u, s in spans.items()}
    found["events"] = events
    return found




def priority(step_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, running_service(Path(tmp), user="alice") as s:
        bob = s.store.create_token("bob", max_priority=5)
        submit(s, "warm", 2, 0.0, bob)
        wait_done(s, "warm", bob)
        s.call("POST", "/studies?preflight=false",
               CHECKPOINTED_STUDY.format(name="alice-big", trials=12, step_s=step_s), token=s.token)
        deadline = time.time() + 120
        while sum(1 for t in s.store.get_trials("alice-big")
                  if t.state == TrialState.RUNNING and (t.last_step or 0) >= 1) < 2:
            if time.time() > deadline:  # both of alice's trials past their first step
                raise TimeoutError("alice's study never ran 2 trials")
            time.sleep(0.2)
        submitted = time.time()
        s.call("POST", "/studies?preflight=false&priority=5",
               TIMED_STUDY.format(name="bob-urgent", trials=2, step_s=step_s), token=bob)
        wait_done(s, "bob-urgent", bob)
        wait_done(s, "alice-big", s.token)
        asked = min(e["at"] for e in read_events(s.home / "allowances")
                    if "alice-big" in e.get("preempted", ()))
        first = min(t.started_at or math.inf for t in s.store.get_trials("bob-urgent"))
        paused = s.store.get_events("alice-big", kind=EventKind.PAUSED)
        trials = s.store.get_trials("alice-big", measurements=True)
        once = all([m.step for m in t.measurements] == [1, 2, 3, 4] for t in trials)
        done = all(t.state == TrialState.COMPLETED for t in trials)
    freed = max((e.recorded_at for e in paused), default=math.nan)
    return {"submitted_to_first_trial_s": first - submitted,
            "asked_to_first_trial_s": first - asked, "checkpoint_interval_s": step_s,
            "asked_to_last_pause_s": freed - asked,
            "paused": len(paused), "paused_at_steps": sorted(e.step for e in paused),
            "all_completed": done, "every_step_once": once}


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most of ``spans`` (start, end) that overlap at any moment; one ending as another
    starts does not overlap it."""
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans],
                   key=lambda edge: (edge[0], edge[1]))
    held = most = 0
    for _, change in edges:
        held += change
        most = max(most, held)
    return most


def quota(step_s: float, trials: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LoopbackCluster(Path(tmp) / "ray-home").start()
        try:
            cluster.add_worker(cpus=4, gpus=4)
            with running_service(Path(tmp), user="alice", env=cluster.env,
                                 args=["--address", cluster.address]) as s:
                s.store.set_quota("alice", {"GPU": 1.0})
                tokens = {"alice": s.token, "bob": s.store.create_token("bob")}
                studies = {"alice": ["alice-1", "alice-2"], "bob": ["bob-1"]}
                for user, names in studies.items():
                    for name in names:
                        s.call("POST", "/studies?preflight=false",
                               GPU_STUDY.format(name=name, trials=trials, step_s=step_s),
                               token=tokens[user])
                for user, names in studies.items():
                    for name in names:
                        wait_done(s, name, tokens[user])
                events = read_events(s.home / "allowances")
                spans = {u: [(t.started_at or 0.0, t.finished_at or 0.0) for n in names
                             for t in s.store.get_trials(n)] for u, names in studies.items()}
        finally:
            cluster.stop()
    allowed = [sum(e["studies"][n]["allowance"] for n in studies["alice"] if n in e["studies"])
               for e in events]
    return {"gpus": 4, "alice_quota_gpus": 1, "trials_per_study": trials,
            "alice_most_gpus_held": most_at_once(spans["alice"]),
            "bob_most_gpus_held": most_at_once(spans["bob"]),
            "alice_most_allowed": max(allowed), "decisions": len(events)}


def fairness(spans: dict[str, list[tuple[float, float]]], start: float) -> dict[str, Any]:
    """Jain's index over the users' CPU-seconds per window, from ``start`` (when every user's
    study has been submitted) until the first user's last trial ends."""
    end = min(max(b for _, b in s) for s in spans.values())
    windows: list[dict[str, Any]] = []
    at = start
    while at < end:
        stop = min(at + WINDOW_S, end)
        if stop - at >= WINDOW_S / 2 or not windows:  # a last window of under 30 s: left out
            used = [sum(max(0.0, min(b, stop) - max(a, at)) for a, b in s) / CPUS
                    for s in spans.values()]
            windows.append({"from_s": at - start, "to_s": stop - start,
                            "jain": jain_index(used), "dominant_s": used})
        at += WINDOW_S
    if not windows:
        raise AssertionError("a study ended before the last was submitted: make them bigger")
    return {"windows": windows, "min_jain": min(float(w["jain"]) for w in windows),
            "overall_jain": jain_index([sum(b - a for a, b in s) for s in spans.values()])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--step-s", type=float, default=1.0)
    parser.add_argument("--big", type=int, default=12)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", choices=("a", "b", "c", "d"), help="Run one scenario.")
    args = parser.parse_args()
    found: dict[str, list[Any]] = {"head_of_line": [], "three_users": [], "priority": [],
                                   "quota": []}
    for repeat in range(args.repeats):
        if args.only in (None, "d"):
            d = quota(args.step_s, 6)
            found["quota"].append(d)
            print(f"(d) run {repeat + 1}: alice (quota 1 of {d['gpus']} GPUs) held at most "
                  f"{d['alice_most_gpus_held']} GPU(s) at once and was allowed at most "
                  f"{d['alice_most_allowed']} trial(s) over {d['decisions']} decisions; bob "
                  f"held at most {d['bob_most_gpus_held']}", flush=True)
        if args.only in (None, "c"):
            c = priority(args.step_s)
            found["priority"].append(c)
            print(f"(c) run {repeat + 1}: alice's trials paused "
                  f"{c['asked_to_last_pause_s']:.2f} s after her study was asked to give slots "
                  f"back (checkpoint interval {c['checkpoint_interval_s']:g} s); bob's first "
                  f"trial {c['asked_to_first_trial_s']:.1f} s after the ask, "
                  f"{c['submitted_to_first_trial_s']:.1f} s after he submitted; {c['paused']} "
                  f"of alice's trials paused at steps "
                  f"{c['paused_at_steps']}; all completed: {c['all_completed']}; every step "
                  f"stored once: {c['every_step_once']}", flush=True)
        if args.only in (None, "a"):
            a = head_of_line(args.step_s)
            found["head_of_line"].append(a)
            print(f"(a) run {repeat + 1}: bob alone {a['alone_s']:.1f} s, beside alice's 24 "
                  f"trials {a['with_big_s']:.1f} s: {a['ratio']:.2f}x (alice had "
                  f"{a['big_trials_left_when_small_ended']} trials left)", flush=True)
        if args.only in (None, "b"):
            b = three_users(args.step_s, args.big)
            found["three_users"].append(b)
            print(f"(b) run {repeat + 1}: Jain's index per {WINDOW_S:g} s window: "
                  + ", ".join(f"{w['jain']:.3f}" for w in b["windows"])
                  + f" (min {b['min_jain']:.3f}; whole run {b['overall_jain']:.3f})",
                  flush=True)
    if args.json:
        args.json.write_text(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
