"""Which physical GPU a trial holds, as CUDA sees it: the ids in ``CUDA_VISIBLE_DEVICES`` (what
Ray assigns) resolved to NVML devices the way the CUDA runtime resolves them, so the telemetry
names the GPU the objective actually ran on, by its UUID.

- A UUID (``GPU-...``) or a MIG instance (``MIG-...``) names one device: NVML finds it by UUID.
- A number is an index into CUDA's own order of the machine's GPUs. ``CUDA_DEVICE_ORDER=
  PCI_BUS_ID`` makes that NVML's order (by PCI bus). CUDA's default, ``FASTEST_FIRST``, puts the
  fastest device first; on a node of identical GPUs the orders agree, on a mixed node they do
  not. The speed is approximated as CUDA's heuristic does it: compute capability, then
  multiprocessors times clock, ties kept in PCI order.
- A MIG instance has no utilisation of its own in NVML: its memory is measured, and its
  utilisation is recorded as unavailable, with the reason.

``nvml`` is the ``pynvml`` module (``nvidia-ml-py``), passed in so that the rules can be tested
with a fake one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PCI_BUS_ID = "PCI_BUS_ID"
FASTEST_FIRST = "FASTEST_FIRST"
MIG_UTILISATION = "unavailable on a MIG instance (NVML reports none per instance)"


@dataclass(frozen=True)
class Gpu:
    """One device a trial holds: the id it was given, NVML's handle, its name and UUID."""

    requested: str  # as CUDA_VISIBLE_DEVICES names it
    handle: Any
    name: str
    uuid: str
    mig: bool


def resolve(nvml: Any, ids: list[str], order: str | None) -> list[Gpu]:
    """The NVML devices that CUDA device ids ``ids`` name under ``CUDA_DEVICE_ORDER=order``
    (None: CUDA's default, fastest first). ValueError for an index past the machine's GPUs."""
    numbered: list[Any] | None = None
    found = []
    for gpu_id in ids:
        if gpu_id.isdigit():
            if numbered is None:
                numbered = cuda_order(nvml, order)
            index = int(gpu_id)
            if index >= len(numbered):
                raise ValueError(f"CUDA device {index} does not exist: this machine has "
                                 f"{len(numbered)} GPUs")
            handle = numbered[index]
        else:
            handle = nvml.nvmlDeviceGetHandleByUUID(gpu_id)
        found.append(Gpu(gpu_id, handle, _text(nvml.nvmlDeviceGetName(handle)),
                         _text(nvml.nvmlDeviceGetUUID(handle)), _is_mig(nvml, handle)))
    return found


def cuda_order(nvml: Any, order: str | None) -> list[Any]:
    """The machine's GPU handles in the order CUDA numbers them."""
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
    if (order or FASTEST_FIRST).strip().upper() == PCI_BUS_ID:
        return handles  # NVML enumerates by PCI bus id
    speed = {id(h): _speed(nvml, h) for h in handles}
    return sorted(handles, key=lambda h: speed[id(h)], reverse=True)  # stable: PCI on ties


def _speed(nvml: Any, handle: Any) -> tuple[float, ...]:
    major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
    try:
        cores = float(nvml.nvmlDeviceGetNumGpuCores(handle))
    except Exception:  # older drivers: compute capability alone
        cores = 0.0
    try:
        clock = float(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM))
    except Exception:
        clock = 0.0
    return (float(major), float(minor), cores * clock)


def _is_mig(nvml: Any, handle: Any) -> bool:
    try:
        return bool(nvml.nvmlDeviceIsMigDeviceHandle(handle))
    except Exception:
        return False


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
