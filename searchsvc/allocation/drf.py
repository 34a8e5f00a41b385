"""Dominant-resource fairness over whole trial slots: how many trials each study of a shared
cluster may run at once.

Each user's *dominant share* is the largest fraction of any one resource (CPU, GPU, ...) the
slots given to their studies would hold, divided by the user's weight. Slots are handed out one
at a time (progressive filling):

1. to the studies of the highest priority first: a lower priority gets only what the higher
   ones cannot use;
2. within a priority, to the user with the lowest dominant share; among users with equal
   shares, to the one that has used the least so far (``used``: dominant-resource-seconds over
   weight), so that whole slots, rotated as trials end, add up to fair shares over time;
3. within a user, to the study with the fewest slots so far, then the oldest.

A slot is given only where one more trial fits in what is left of the cluster and in the
user's quota, and only to a study that can use it (``wants``). The allocation is
work-conserving: what one user cannot use goes to the others.

Resources are counted over the whole cluster, not per node: a trial that fits in the cluster's
total but on no single node waits in Ray's queue, as it would without the allocator (a study no
node can ever hold is refused when submitted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

Resources = Mapping[str, float]


@dataclass(frozen=True)
class Claim:
    """One study's claim on the cluster.

    ``per_trial``: what one of its trials holds (a data-parallel trial: all its workers);
    ``wants``: the most trials it could run at once now (its concurrency, within its
    unfinished trials); ``order``: arrival order, earlier first among equals."""

    study: str
    user: str
    per_trial: Resources
    wants: int
    priority: int = 0
    order: float = 0.0

    def __post_init__(self) -> None:
        if self.wants < 0:
            raise ValueError(f"a study wants at least 0 trials at once (got {self.wants})")
        bad = {k: v for k, v in self.per_trial.items() if v < 0}
        if bad:
            raise ValueError(f"a trial's resources are not negative (got {bad})")


@dataclass(frozen=True)
class Policy:
    """How users share: ``weights`` per user (1 when unnamed), ``quotas``: the most of each
    resource a user's studies may hold at once, ``used``: each user's dominant-resource-
    seconds so far (the tie-break that rotates whole slots)."""

    weights: Mapping[str, float] = field(default_factory=dict)
    quotas: Mapping[str, Resources] = field(default_factory=dict)
    used: Mapping[str, float] = field(default_factory=dict)

    def weight(self, user: str) -> float:
        weight = self.weights.get(user, 1.0)
        if weight <= 0:
            raise ValueError(f"a user's weight is positive (got {weight!r} for {user!r})")
        return weight


def dominant_share(held: Resources, capacity: Resources) -> float:
    """The largest fraction of any resource of ``capacity`` that ``held`` holds (resources the
    cluster does not have count as fully held)."""
    shares = [amount / capacity[key] if capacity.get(key, 0.0) > 0 else float("inf")
              for key, amount in held.items() if amount > 0]
    return max(shares, default=0.0)


def allocate(capacity: Resources, claims: Sequence[Claim],
             policy: Policy | None = None) -> dict[str, int]:
    """The number of trials each claim's study may run at once (every claim's study is a key,
    0 where it gets nothing)."""
    policy = policy or Policy()
    names = [c.study for c in claims]
    if len(set(names)) != len(names):
        raise ValueError(f"one claim per study (got {sorted(names)})")
    slots = {c.study: 0 for c in claims}
    free = dict(capacity)
    held: dict[str, dict[str, float]] = {c.user: {} for c in claims}
    open_claims = [c for c in claims if c.wants > 0]
    while True:
        fitting = [c for c in open_claims if slots[c.study] < c.wants
                   and _fits(c.per_trial, free)
                   and _fits(c.per_trial, _room(policy.quotas.get(c.user), held[c.user]),
                             unnamed=float("inf"))]
        if not fitting:
            return slots
        chosen = min(fitting, key=lambda c: (
            -c.priority,
            dominant_share(held[c.user], capacity) / policy.weight(c.user),
            policy.used.get(c.user, 0.0) / policy.weight(c.user),
            c.user,
            slots[c.study] * dominant_share(c.per_trial, capacity), c.order, c.study))
        slots[chosen.study] += 1
        for key, amount in chosen.per_trial.items():
            free[key] = free.get(key, 0.0) - amount
            held[chosen.user][key] = held[chosen.user].get(key, 0.0) + amount


def preempted(claims: Sequence[Claim], slots: Mapping[str, int],
              running: Mapping[str, int]) -> set[str]:
    """The studies that give back the slots above their allowance ``slots`` now, pausing
    trials at their next checkpoint: those running more trials than their allowance while a
    study of higher priority has an allowance above its ``running`` trials (it waits for what
    they hold). Between equal priorities, shares even out as trials end, never by pausing."""
    waiting = [c.priority for c in claims if slots.get(c.study, 0) > running.get(c.study, 0)]
    if not waiting:
        return set()
    top = max(waiting)
    return {c.study for c in claims
            if running.get(c.study, 0) > slots.get(c.study, 0) and c.priority < top}


def _room(quota: Resources | None, held: Resources) -> Resources | None:
    if quota is None:
        return None
    return {key: limit - held.get(key, 0.0) for key, limit in quota.items()}


def _fits(need: Resources, room: Resources | None, *, unnamed: float = 0.0) -> bool:
    """Whether ``need`` fits in ``room`` (None: no limit); ``unnamed``: the room of a resource
    ``room`` does not name (none in a cluster, no limit in a quota)."""
    if room is None:
        return True
    return all(amount <= room.get(key, unnamed) + 1e-9 for key, amount in need.items()
               if amount > 0)


def accrue(policy: Policy, held: Mapping[str, Resources], capacity: Resources,
           seconds: float) -> Policy:
    """``policy`` with each user's ``used`` grown by ``seconds`` of holding ``held[user]``
    (what their running trials hold), as dominant share over weight."""
    used = dict(policy.used)
    for user, resources in held.items():
        used[user] = used.get(user, 0.0) + (dominant_share(resources, capacity)
                                            / policy.weight(user) * seconds)
    return Policy(policy.weights, policy.quotas, used)


def jain_index(amounts: Sequence[float]) -> float:
    """Jain's fairness index of ``amounts``: 1 when all are equal, 1/n when one holds all
    (1 for none, or all zero)."""
    total, squares = sum(amounts), sum(a * a for a in amounts)
    return 1.0 if squares == 0 else total * total / (len(amounts) * squares)
