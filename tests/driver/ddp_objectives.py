"""An objective written with searchsvc's sdk, run as a data-parallel trial: every rank reports
and restores through the sdk. On its first try, rank 1 writes its pid and then waits at step 3
until the test kills it (the test does so once the store holds step 2); a retried try, which
finds the marker the test wrote, trains on."""

from __future__ import annotations

import os
import time
from pathlib import Path

import torch
import torch.distributed as dist

from searchsvc import sdk

WAIT_S = 300  # the most rank 1 waits to be killed (the test's own timeout ends it sooner)


def train(config):
    context = sdk.trial_context()
    rank, world = dist.get_rank(), dist.get_world_size()
    # The trial's seed and budget are the same on every rank.
    mine = torch.tensor([float(context.seed), float(context.max_steps or 0)])
    everyone = [torch.zeros(2) for _ in range(world)]
    dist.all_gather(everyone, mine)
    agree = float(all(torch.equal(t, everyone[0]) for t in everyone))
    restored = sdk.restore()
    start = restored["step"] if restored else 0
    weight = restored["weight"] if restored else torch.zeros(1)
    folder = Path(config["folder"])
    # Every rank runs in the folder of this module (beside its study file), as a trial does.
    here = torch.tensor([float(Path.cwd() == folder)])
    dist.all_reduce(here, op=dist.ReduceOp.MIN)
    for step in range(start + 1, sdk.max_steps(4) + 1):
        if rank == 1 and step == 3 and not (folder / "killed").exists():
            (folder / "rank1.pid").write_text(str(os.getpid()))
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline:  # until the test kills this process
                time.sleep(0.1)
        weight = weight + 1.0
        total = weight.clone()
        dist.all_reduce(total)
        sdk.report({"loss": 1.0 / step, "ranks_agree": agree, "world": float(world),
                    "restored_from": float(start), "reduced": float(total.item()),
                    "ranks_in_folder": float(here.item()),
                    # the node's own setting, which Ray Train's controller reads too
                    "preemption_watcher": float(os.environ.get(
                        "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "1") != "0")},
                   state=lambda step=step, weight=weight: {"step": step, "weight": weight})
