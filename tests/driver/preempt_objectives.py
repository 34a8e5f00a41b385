"""An objective for the preemption test: 6 steps, a checkpoint at every even step only.

Each trial waits at step 1 until both trials run. At step 3 trial 0 sets the study's allowance
to 1 trial with ``preempt`` once the store holds both trials' step 2, as the service's
allocator does when a study of higher priority arrives, and both trials wait there until it has:
the first reports the driver takes in under the new allowance are step 3's, which carry no
checkpoint, then step 4's, which do. Every report says
the step its trial resumed from (0: none) and whether the other trial has reached its last
step. With ``hold_at: N`` in its config, a trial that has not been restored waits at step N
(until its process is killed): the killed-driver test stops the study with one trial paused
and the other still short of its end."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from searchsvc import sdk
from searchsvc.allocation.allowance import AllowanceReader, write_allowance

WAIT_S = 120  # the most a trial waits for the other trial, or for the new allowance


def _wait_until(ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {WAIT_S} s for {what}")
        time.sleep(0.05)


def _stored_through(url: str, step: int) -> bool:
    from searchsvc.store import SqlStore

    trials = SqlStore(url).get_trials("low", measurements=True)
    return len(trials) == 2 and all(len(t.measurements) >= step for t in trials)


def _preempting(allowance: Path) -> bool:
    got = AllowanceReader(allowance)()
    return got is not None and got.preempt


def train(config: dict) -> None:
    context = sdk.trial_context()
    folder, allowance = Path(config["folder"]), Path(config["allowance_file"])
    restored = sdk.restore()
    start = int(restored["step"]) if restored else 0
    for step in range(start + 1, sdk.max_steps(6) + 1):
        if step == 1:
            (folder / f"started-{context.number}").touch()
            _wait_until(lambda: len(list(folder.glob("started-*"))) == 2, "the other trial")
        if step == 3 and not restored:
            if context.number == 0:
                # Once the driver has taken in both trials' step 2 (it may lag behind their
                # reports): what it takes in next is step 3, sent after the new allowance.
                _wait_until(lambda: _stored_through(config["store"], 2), "step 2 stored")
                write_allowance(allowance, 1, why="a study of higher priority arrived",
                                preempt=True)
            _wait_until(lambda: _preempting(allowance), "the new allowance")
        if step == config.get("hold_at") and not restored:
            _wait_until(lambda: False, "the driver to be killed")
        time.sleep(0.2)
        if step == 6:
            (folder / f"done-{context.number}").touch()
        other_done = (folder / f"done-{1 - context.number}").exists()
        metrics = {"loss": 1.0 / step, "resumed_from": float(start),
                   "other_done": float(other_done)}
        if step % 2 == 0:
            sdk.report(metrics, state=lambda step=step: {"step": step})
        else:
            sdk.report(metrics)
