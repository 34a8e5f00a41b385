"""Trials that wait for resources, told once each after :data:`WAIT_WARN_S`: a request the
cluster cannot hold now (busy, or an autoscaler yet to add a node) otherwise looks like a
study that hangs. Pure: the callback hands in what it sees of Ray Tune's trials at each step.

Two kinds of wait are seen:

- a trial Ray Tune holds **pending**: it has not been placed (not enough free CPUs or GPUs);
- a **data-parallel** trial whose launcher runs but which has reported no step yet: its Ray
  Train workers may be waiting to be placed (or its first step is slow; the message says
  which the free resources point to).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from searchsvc.core.durations import format_duration
from searchsvc.spec.model import Resources

WAIT_WARN_S = 60.0


@dataclass
class Waits:
    """When each waiting trial (by number) was first seen waiting; :meth:`overdue` gives those
    past ``after_s`` not yet told, and forgets the ones that stopped waiting."""

    after_s: float = WAIT_WARN_S
    since: dict[int, float] = field(default_factory=dict)
    told: set[int] = field(default_factory=set)

    def overdue(self, waiting: set[int], now: float) -> dict[int, float]:
        """Of ``waiting`` (the trials waiting at ``now``), those waiting ``after_s`` or more
        and not told before, with how long they have waited."""
        for number in list(self.since):
            if number not in waiting:
                del self.since[number]
        for number in waiting:
            self.since.setdefault(number, now)
        due = {n: now - t for n, t in self.since.items()
               if now - t >= self.after_s and n not in self.told}
        self.told.update(due)
        return due

    @property
    def waiting(self) -> int:
        """How many trials wait now."""
        return len(self.since)


def wait_message(number: int, seconds: float, *, pending: bool, request: str,
                 free: Mapping[str, float]) -> str:
    """What the progress says of trial ``number`` waiting ``seconds`` for ``request`` (e.g.
    ``2 workers x 1 CPU``), with the cluster's ``free`` resources now."""
    now = ", ".join(f"{free.get(k, 0.0):g} {k}" for k in ("CPU", "GPU")) + " free now"
    waited = format_duration(seconds)
    if pending:
        return (f"trial {number} has waited {waited} for resources ({request}; {now}): "
                "the cluster is busy, or waits for an autoscaler to add a node")
    return (f"trial {number} has reported no step in {waited}: its workers ({request}) "
            f"wait to be placed, or its first step is slow ({now})")


def resource_request(resources: Resources) -> str:
    """One trial's request in words: ``1 CPU`` / ``2 workers x 1 CPU, 1 GPU``."""
    each = ", ".join(f"{amount:g} {key}" for key, amount in (("CPU", resources.cpu),
                                                             ("GPU", resources.gpu))
                     if amount) or "no CPU or GPU"
    return (f"{resources.worker_count} workers x {each}" if resources.data_parallel else each)
