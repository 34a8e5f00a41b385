"""Planted objectives for the telemetry tests (tests/driver/test_telemetry_on_ray.py): copied
next to the study file so Ray's workers import them.

``loader: slow`` sleeps 100 ms in the data iterable per batch against 5 ms of "compute" per
batch: the loop waits for data about 95% of its step time. ``loader: fast`` yields at once
(about 0%). ``batch_size`` of 1024 or more raises torch's out-of-memory error, as a GPU would."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import torch

from searchsvc import sdk

SLOW_LOAD_S = 0.1
COMPUTE_S = 0.005
BATCHES = 4


def batches(delay_s: float, batch_size: int) -> Iterator[list[float]]:
    for _ in range(BATCHES):
        if delay_s:
            time.sleep(delay_s)
        yield [0.0] * batch_size


def train(config: dict[str, Any]) -> None:
    batch_size = int(config["batch_size"])
    delay = SLOW_LOAD_S if config["loader"] == "slow" else 0.0
    if batch_size >= 1024:
        raise torch.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.10 GiB total capacity)")
    for step in range(sdk.max_steps(3)):
        for _batch in sdk.data_loader(batches(delay, batch_size)):
            time.sleep(COMPUTE_S)
        sdk.report({"loss": 1.0 / (step + 1) + batch_size / 1000}, samples=BATCHES * batch_size)
