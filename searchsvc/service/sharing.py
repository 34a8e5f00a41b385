"""The service's share of its cluster between the studies it runs (searchsvc.allocation): their
claims read from the store, allowances written for their drivers, and every decision in an
event log.

Allowances are recomputed when something changes: a study arrives or ends, a trial starts or
ends (a study's running count moves), or the cluster's CPUs and GPUs change; not on a clock,
so that two users whose usage runs level do not trade a slot back and forth. Each decision is
one JSON line of ``events.jsonl`` in the allowances folder: when, why, every study's allowance
and running trials, which allowances changed, and which studies are to pause trials at their
next checkpoint for a study of higher priority (``preempted``; with ``preemption`` off, none:
their trials finish first)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchsvc.allocation import Claim, Policy, accrue, allocate, preempted
from searchsvc.allocation.allowance import write_allowance
from searchsvc.core import StudyRecord
from searchsvc.spec import spec_of

EVENTS = "events.jsonl"
PRIORITY_KEY = "priority"  # in a study's provenance: the priority it was submitted with


def priority_of(study: StudyRecord) -> int:
    """A study's priority on the shared cluster: the one it was submitted with (``submit
    --priority``), else its study file's."""
    given = study.provenance.get(PRIORITY_KEY)
    return int(given) if given is not None else spec_of(study).priority


@dataclass(frozen=True)
class Holding:
    """One study as the allocator sees it at a moment: its claim and what it holds."""

    claim: Claim
    running: int

    ended: int = 0  # its trials that ended for good

    @property
    def key(self) -> tuple[Any, ...]:
        """What, when it changes, calls for a new decision: a trial that ended counts even
        when the study started its next one before the service looked."""
        claim = self.claim
        return (claim.study, claim.user, tuple(sorted(claim.per_trial.items())), claim.wants,
                claim.priority, self.running, self.ended)

    @property
    def held(self) -> dict[str, float]:
        return {k: v * self.running for k, v in self.claim.per_trial.items()}


def holding_of(study: StudyRecord) -> Holding:
    """The claim of a running or queued service study: one trial's resources (all workers of
    a data-parallel one), and the most trials it could run at once now (its
    ``budget.max_concurrent``, within its unfinished trials)."""
    spec = spec_of(study)
    workers = spec.resources.worker_count
    per_trial = {"CPU": spec.resources.cpu * workers, "GPU": spec.resources.gpu * workers}
    counts = study.counts
    wants = spec.budget.max_concurrent or study.total_trials or 1
    if study.total_trials is not None:
        # at least one: a study planning its seed repeats has none unfinished for a moment
        wants = min(wants, max(1, study.total_trials - counts.ended))
    return Holding(Claim(study.name, study.owner or "", per_trial, wants,
                         priority=priority_of(study), order=study.created_at), counts.running,
                   counts.ended)


class ClusterShares:
    """Allowances for the studies a service runs, in ``folder`` (one file per study, read by its
    driver: searchsvc.allocation.allowance), and the log of how they were decided."""

    def __init__(self, folder: Path, *, clock: Callable[[], float] = time.time,
                 preemption: bool = True):
        self.folder, self.clock, self.preemption = folder, clock, preemption
        self.policy = Policy()
        self.allowances: dict[str, int] = {}
        self.preempted: set[str] = set()
        self._seen: tuple[Any, ...] | None = None
        self._holdings: dict[str, Holding] = {}
        self._capacity: dict[str, float] = {}
        self._at: float | None = None

    def file_for(self, study: str) -> Path:
        return self.folder / f"{study}.json"

    def update(self, studies: Sequence[StudyRecord], capacity: Mapping[str, float] | None,
               quotas: Mapping[str, Mapping[str, float]] | None = None) -> None:
        """Recompute the allowances of ``studies`` (those the service runs or is about to
        start) when they, ``capacity`` or the users' ``quotas`` changed since the last call;
        ``capacity`` None: the cluster's size is not known yet (nothing is decided)."""
        if capacity is None:
            return
        holdings = {s.name: holding_of(s) for s in studies}
        quotas = {user: dict(limits) for user, limits in (quotas or {}).items()}
        seen = (tuple(sorted(h.key for h in holdings.values())), tuple(sorted(capacity.items())),
                tuple(sorted((u, tuple(sorted(q.items()))) for u, q in quotas.items())))
        now = self.clock()
        self._accrue(now)
        self._holdings, self._capacity = holdings, dict(capacity)
        self.policy = Policy(self.policy.weights, quotas, self.policy.used)
        if seen == self._seen:
            return
        self._seen = seen
        claims = [h.claim for h in holdings.values()]
        decided = allocate(capacity, claims, self.policy)
        pausing = (preempted(claims, decided, {n: h.running for n, h in holdings.items()})
                   if self.preemption else set())
        changed = {name: [self.allowances.get(name), n] for name, n in decided.items()
                   if self.allowances.get(name) != n}
        for name, trials in decided.items():
            if name in changed or (name in pausing) != (name in self.preempted):
                write_allowance(self.file_for(name), trials, why=self._why(name, decided),
                                preempt=name in pausing)
        for name in set(self.allowances) - set(decided):
            self.file_for(name).unlink(missing_ok=True)
        self.allowances, self.preempted = decided, pausing
        if decided or changed:  # nothing to run and nothing taken back: nothing to log
            self._log(now, decided, changed)

    def _accrue(self, now: float) -> None:
        """Each user's usage grows by what their running trials held since the last call."""
        if self._at is not None and self._holdings:
            held: dict[str, dict[str, float]] = {}
            for holding in self._holdings.values():
                mine = held.setdefault(holding.claim.user, {})
                for key, amount in holding.held.items():
                    mine[key] = mine.get(key, 0.0) + amount
            self.policy = accrue(self.policy, held, self._capacity, now - self._at)
        self._at = now

    def _why(self, name: str, decided: Mapping[str, int]) -> str:
        """What the driver of ``name`` says about its allowance."""
        return share_reason(decided[name], sum(decided.values()),
                            self.other_users(self._holdings[name].claim.user))

    def quota_in_use(self, name: str) -> str | None:
        """The quota that keeps study ``name`` below what it wants (``1 GPU``), or None when
        none does."""
        holding = self._holdings[name]
        user = holding.claim.user
        quota = self.policy.quotas.get(user)
        if not quota or self.allowances.get(name, 0) >= holding.claim.wants:
            return None
        held: dict[str, float] = {}
        for other in self._holdings.values():
            if other.claim.user == user:
                for key, amount in other.claim.per_trial.items():
                    held[key] = held.get(key, 0.0) + amount * self.allowances.get(
                        other.claim.study, 0)
        full = [f"{limit:g} {key}" for key, limit in sorted(quota.items())
                if held.get(key, 0.0) + holding.claim.per_trial.get(key, 0.0) > limit + 1e-9]
        return " and ".join(full) or None

    def other_users(self, user: str) -> int:
        """How many users other than ``user`` have studies the service drives."""
        return len({h.claim.user for h in self._holdings.values()} - {user})

    def holding(self, study: str) -> Holding | None:
        """Study ``study`` as the last decision saw it (None: not among them)."""
        return self._holdings.get(study)

    def others_of(self, user: str) -> list[dict[str, Any]]:
        """Other users' studies, as load only: each one's priority, one trial's resources, its
        running trials and allowance (no name, no user)."""
        return [{"priority": h.claim.priority, "per_trial": dict(h.claim.per_trial),
                 "running": h.running, "allowance": self.allowances.get(name, 0)}
                for name, h in sorted(self._holdings.items()) if h.claim.user != user]

    def _log(self, now: float, decided: Mapping[str, int],
             changed: Mapping[str, list[int | None]]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        event = {
            "at": now,
            "capacity": self._capacity,
            "studies": {name: {"user": h.claim.user, "wants": h.claim.wants,
                               "running": h.running, "allowance": decided[name]}
                        for name, h in sorted(self._holdings.items())},
            "changed": dict(changed),
            "preempted": sorted(self.preempted),
            "used": dict(self.policy.used),
        }
        with (self.folder / EVENTS).open("a") as log:
            log.write(json.dumps(event) + "\n")


def share_reason(allowance: int, slots: int, other_users: int) -> str:
    """Why a study has the allowance it has: empty when no other user has studies running."""
    if not other_users:
        return ""
    return (f"{allowance} of {slots} slot(s) while {other_users} other user(s) have studies "
            "running")


def share_line(study: StudyRecord, *, shares: ClusterShares | None, driven: bool,
               ahead: int, max_running: int) -> str:
    """The one line every surface (``searchsvc queue``, ``status``, the REST API) shows about
    how a queued or running study of the service is doing on the shared cluster."""
    if not driven:
        return (f"queued: {ahead} stud{'y' if ahead == 1 else 'ies'} ahead of it; the service "
                f"drives {max_running} at once")
    holding = shares.holding(study.name) if shares is not None else None
    if shares is None or holding is None or study.name not in shares.allowances:
        return "runs as many trials at once as its study file allows"
    allowance = shares.allowances[study.name]
    quota = shares.quota_in_use(study.name)
    if quota is not None:
        return (f"{'waiting' if allowance == 0 else f'runs up to {allowance} trial(s) at once'}"
                f": your quota of {quota} is in use")
    reason = share_reason(allowance, sum(shares.allowances.values()),
                          shares.other_users(holding.claim.user))
    if allowance == 0:
        return f"waiting for a slot: your share is {reason or '0 slots'}"
    said = f"runs up to {allowance} trial(s) at once"
    return f"{said}: {reason}" if reason else said


def queue_view(user: str, studies: Sequence[StudyRecord], *, driven: set[str],
               shares: ClusterShares | None, max_running: int,
               capacity: Mapping[str, float] | None) -> dict[str, Any]:
    """The queue as ``user`` may see it: their own queued and running studies in full
    (priority, allowance, running trials, queue position, the line that says why), other
    users' only as load (how many users; each study's priority, resources, running trials).

    ``studies``: the service's queued and running studies, oldest first; ``driven``: those it
    runs a driver for."""
    waiting = [s.name for s in studies if s.name not in driven]
    mine = []
    for study in studies:
        if study.owner != user:
            continue
        ahead = waiting.index(study.name) if study.name in waiting else 0
        holding = holding_of(study)
        mine.append({
            "name": study.name, "state": str(study.state),
            "priority": holding.claim.priority, "running": holding.running,
            "wants": holding.claim.wants,
            "allowance": shares.allowances.get(study.name) if shares is not None else None,
            "position": ahead + 1 if study.name in waiting else None,
            "line": share_line(study, shares=shares, driven=study.name in driven, ahead=ahead,
                               max_running=max_running)})
    return {"cluster": dict(capacity) if capacity is not None else None,
            "max_running": max_running,
            "other_users": len({s.owner for s in studies} - {user, None}),
            "studies": mine,
            "others": shares.others_of(user) if shares is not None else []}


def read_events(folder: Path) -> list[dict[str, Any]]:
    """The allocator's decisions logged in ``folder``, oldest first."""
    path = folder / EVENTS
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
