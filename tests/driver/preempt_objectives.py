"""An objective for the preemption test: 6 steps, a checkpoint at every even step only. Each
trial waits at step 1 until both trials run; trial 0 then sets the study's allowance to 1 trial
with ``preempt`` before its step 2, as the service's allocator does when a study of higher
priority arrives. A resumed trial reports the step it resumed from."""

from __future__ import annotations

import time
from pathlib import Path

from searchsvc import sdk
from searchsvc.allocation.allowance import write_allowance

WAIT_S = 120  # the most a trial waits for the other to start


def train(config: dict) -> None:
    context = sdk.trial_context()
    folder = Path(config["folder"])
    restored = sdk.restore()
    start = int(restored["step"]) if restored else 0
    for step in range(start + 1, sdk.max_steps(6) + 1):
        if step == 1:
            (folder / f"started-{context.number}").touch()
            deadline = time.monotonic() + WAIT_S
            while len(list(folder.glob("started-*"))) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
        if step == 2 and context.number == 0:
            write_allowance(Path(config["allowance_file"]), 1,
                            why="a study of higher priority arrived", preempt=True)
        time.sleep(0.2)
        metrics = {"loss": 1.0 / step, "resumed_from": float(start)}
        if step % 2 == 0:
            sdk.report(metrics, state=lambda step=step: {"step": step})
        else:
            sdk.report(metrics)
