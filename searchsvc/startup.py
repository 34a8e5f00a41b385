"""Python's cyclic garbage collector while a searchsvc process starts.

A process starting creates hundreds of thousands of objects that live as long as it does:
Ray Tune, the store and the report's libraries in a driver, Ray Tune and the objective's torch
in a trial's worker. At CPython's default threshold (a collection of the youngest generation
every 700 net allocations, a fuller one every tenth of those) the collector walks them again and
again while they are imported, finding nothing to free: importing Ray Tune, searchsvc's worker
and torch takes 1.7 CPU-seconds with it and 1.3 with the youngest generation's threshold at
100,000. So a process collects rarely while it starts, and as usual once its own work begins:

- a command of the CLI, a short batch process, collects rarely for its whole life (every
  100,000 allocations is still a collection: cyclic garbage is freed, a little later);
- every worker process of a Ray node searchsvc starts runs :func:`collect_rarely` first (Ray's
  worker setup hook, :data:`WORKER_SETUP_HOOK`), and a trial's worker is back to the usual
  thresholds once the objective's module is imported, before the objective runs
  (:func:`collect_as_usual`), so a training loop is collected as it would be anywhere else;
  a backend's own search (AutoKeras, one Ray task) is, once the user's objective is built.
"""

from __future__ import annotations

import gc

# The youngest generation's threshold while a process starts: few enough collections that
# they cost next to nothing, while cyclic garbage is still freed.
STARTING_THRESHOLD = 100_000
# What every worker of a node searchsvc starts runs first: "module.function", as Ray's
# ``worker_process_setup_hook`` takes it.
WORKER_SETUP_HOOK = "searchsvc.startup.collect_rarely"

_usual: tuple[int, ...] | None = None  # the thresholds collect_rarely replaced


def collect_rarely() -> None:
    """Collect the youngest generation every :data:`STARTING_THRESHOLD` allocations, the
    older ones at their thresholds, until :func:`collect_as_usual`. The collector stays on.
    Idempotent."""
    global _usual
    if _usual is None:
        _usual = gc.get_threshold()
        gc.set_threshold(STARTING_THRESHOLD, *_usual[1:])


def collect_as_usual() -> None:
    """Restore the thresholds :func:`collect_rarely` replaced; nothing when it did not run in
    this process, or when something else (the objective's own module) has set thresholds
    since, which are then left as they are."""
    global _usual
    if _usual is None:
        return
    if gc.get_threshold()[0] == STARTING_THRESHOLD:
        gc.set_threshold(*_usual)
    _usual = None
