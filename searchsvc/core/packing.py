"""How many trials share one GPU: the one rule the report's packing advice and the driver's
``resources.gpu: auto`` both apply (docs/gpus.md, "Packing").

k trials fit on one GPU, for k in :data:`PACKINGS`, when

- **memory**: ``k x peak x`` :data:`MEMORY_HEADROOM` ``<=`` the GPU's memory (``peak``: the
  most any one trial held, measured per process where NVML can, so it is one trial's share);
- **utilisation**: ``k / now x utilisation <= 100%`` (NVML's utilisation is the whole
  device's, measured while ``now`` trials shared it);
- **CPUs**: with the GPU's CPUs divided among its k trials, each keeps at least the CPUs its
  data loader used (its worker processes and the training loop itself), so packing never
  turns a GPU-light study into an input-bound one.

The largest k that fits wins; 1 (a whole GPU each) when none above it does. Pure numbers in,
a :class:`Packing` out, so both callers and the tests read the same decision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PACKINGS = (1, 2, 4, 8)  # trials per GPU considered (shares 1, 0.5, 0.25, 0.125)
MEMORY_HEADROOM = 1.2  # a trial's peak memory is multiplied by this when checking a fit


@dataclass(frozen=True)
class Packing:
    """The decision: ``trials_per_gpu`` trials on each GPU, each holding ``gpu`` of it and
    ``cpu`` CPUs (None when the CPUs per GPU were not given); ``limit`` says what stopped a
    larger k (``""`` when the largest considered fits)."""

    trials_per_gpu: int
    gpu: float
    cpu: float | None
    limit: str

    def as_dict(self) -> dict[str, object]:
        return {"trials_per_gpu": self.trials_per_gpu, "gpu": self.gpu, "cpu": self.cpu,
                "limit": self.limit}


def trials_now(gpu_per_trial: float) -> int:
    """Trials that share one GPU at ``resources.gpu`` = ``gpu_per_trial`` (1 for a whole GPU
    or more)."""
    if 0 < gpu_per_trial <= 1:
        return max(1, math.floor(1 / gpu_per_trial + 1e-9))
    return 1


def loader_cpus(loader_workers: int | None) -> int | None:
    """The CPUs a trial's data loading keeps busy: its loader's worker processes plus the
    training loop's own process (None when the loader's workers are unknown)."""
    return None if loader_workers is None else max(int(loader_workers), 0) + 1


def choose_packing(*, util_percent: float, peak_mb: float, total_mb: float,
                   gpu_per_trial: float = 1.0, cpus_per_gpu: float | None = None,
                   loader_workers: int | None = None) -> Packing:
    """The most trials per GPU that fit by the module's rule, measured while trials held
    ``gpu_per_trial`` of a GPU each. ``cpus_per_gpu``: the CPUs the GPU's trials share (CPUs
    per trial x trials per GPU today); with ``loader_workers`` (the loader's worker processes
    the trials used) it caps k so that each trial keeps its loader's CPUs."""
    now = trials_now(gpu_per_trial)
    needed = loader_cpus(loader_workers)
    best, limit = 1, ""
    for k in sorted(PACKINGS):
        if k * peak_mb * MEMORY_HEADROOM > total_mb:
            limit = (f"{k} trials x {peak_mb:.0f} MiB peak x {MEMORY_HEADROOM:g} exceed the "
                     f"GPU's {total_mb:.0f} MiB")
            break
        if util_percent * k / now > 100.0:
            limit = (f"{k} trials would need {util_percent * k / now:.0f}% of the GPU "
                     f"({util_percent:.0f}% measured at {now} per GPU)")
            break
        if cpus_per_gpu is not None and needed is not None and cpus_per_gpu / k < needed:
            limit = (f"{k} trials would leave each {cpus_per_gpu / k:g} CPUs, fewer than the "
                     f"{needed} its data loader used ({needed - 1} workers + the loop)")
            break
        best = k
    cpu = None if cpus_per_gpu is None else cpus_per_gpu / best
    return Packing(best, 1.0 / best, cpu, limit)
