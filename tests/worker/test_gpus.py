"""Which GPU a trial holds, with a fake NVML: numeric CUDA ids follow CUDA_DEVICE_ORDER (PCI
order, or CUDA's default fastest-first, which differs on a mixed node), UUIDs and MIG instances
are found by UUID, and a MIG instance's utilisation is stated unavailable while its memory is
measured. No GPU needed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from searchsvc.worker.gpus import MIG_UTILISATION, cuda_order, resolve
from searchsvc.worker.telemetry import _GpuSampler


class NVMLError(Exception):
    pass


@dataclass
class Device:
    name: str
    uuid: str
    capability: tuple[int, int]
    cores: int
    clock: int
    util: int = 50
    used: int = 2 * 1024**3
    total: int = 16 * 1024**3
    mig: bool = False


@dataclass
class FakeNvml:
    """The few pynvml calls searchsvc makes, over ``devices`` in PCI order (NVML's order), and
    ``migs``: MIG instances, reachable only by UUID."""

    devices: list[Device]
    migs: list[Device] = field(default_factory=list)
    NVMLError = NVMLError
    NVML_CLOCK_SM = 1

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Device:
        return self.devices[index]

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> Device:
        for d in [*self.devices, *self.migs]:
            if d.uuid == uuid:
                return d
        raise NVMLError(f"no device {uuid}")

    def nvmlDeviceGetName(self, d: Device) -> bytes:
        return d.name.encode()

    def nvmlDeviceGetUUID(self, d: Device) -> str:
        return d.uuid

    def nvmlDeviceIsMigDeviceHandle(self, d: Device) -> int:
        return int(d.mig)

    def nvmlDeviceGetCudaComputeCapability(self, d: Device) -> tuple[int, int]:
        return d.capability

    def nvmlDeviceGetNumGpuCores(self, d: Device) -> int:
        return d.cores

    def nvmlDeviceGetMaxClockInfo(self, d: Device, clock: int) -> int:
        return d.clock

    def nvmlDeviceGetUtilizationRates(self, d: Device) -> Any:
        if d.mig:
            raise NVMLError("Not Supported")
        return type("Rates", (), {"gpu": d.util})()

    def nvmlDeviceGetComputeRunningProcesses(self, d: Device) -> list[Any]:
        raise NVMLError("Not Supported")  # as in a container: the device's memory is used

    def nvmlDeviceGetMemoryInfo(self, d: Device) -> Any:
        return type("Memory", (), {"used": d.used, "total": d.total})()


def t4(i: int) -> Device:
    return Device("Tesla T4", f"GPU-t4-{i}", (7, 5), 2560, 1590, util=30)


A100 = Device("NVIDIA A100", "GPU-a100", (8, 0), 6912, 1410, util=90)


def test_on_a_mixed_node_numeric_ids_follow_cuda_device_order() -> None:
    nvml = FakeNvml([t4(0), A100, t4(2)])  # the A100 sits second on the PCI bus
    # CUDA's default numbers the fastest first, the rest in PCI order
    assert [g.uuid for g in resolve(nvml, ["0", "1", "2"], None)] == [
        "GPU-a100", "GPU-t4-0", "GPU-t4-2"]
    assert [g.uuid for g in resolve(nvml, ["0"], "FASTEST_FIRST")] == ["GPU-a100"]
    # with CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA numbers them as NVML does
    assert [g.uuid for g in resolve(nvml, ["0", "1"], "PCI_BUS_ID")] == [
        "GPU-t4-0", "GPU-a100"]
    [gpu] = resolve(nvml, ["1"], None)
    assert (gpu.requested, gpu.name, gpu.mig) == ("1", "Tesla T4", False)


def test_on_identical_gpus_the_orders_agree() -> None:
    nvml = FakeNvml([t4(0), t4(1), t4(2)])
    assert cuda_order(nvml, None) == cuda_order(nvml, "PCI_BUS_ID") == nvml.devices


def test_uuids_name_a_device_and_a_bad_index_is_an_error() -> None:
    nvml = FakeNvml([t4(0), A100])
    assert [g.name for g in resolve(nvml, ["GPU-t4-0", "GPU-a100"], None)] == [
        "Tesla T4", "NVIDIA A100"]
    with pytest.raises(ValueError, match="CUDA device 5 does not exist: this machine has 2"):
        resolve(nvml, ["5"], None)


def test_the_telemetry_names_the_gpu_cuda_used_by_uuid() -> None:
    sampler = _GpuSampler(["0"], period_s=60, nvml=FakeNvml([t4(0), A100]), order="")
    try:
        taken = sampler.take()
    finally:
        sampler.close()
    assert (taken["gpu_name"], taken["gpu_uuid"], taken["gpu_ids"]) == (
        "NVIDIA A100", "GPU-a100", ["0"])
    assert taken["gpu_util_mean"] == 90 and taken["gpu_mem_scope"] == "device"


def test_a_mig_instance_has_its_memory_measured_and_its_utilisation_stated_unavailable() -> None:
    mig = Device("NVIDIA A100 MIG 1g.10gb", "MIG-abc", (8, 0), 0, 0, used=3 * 1024**3,
                 total=10 * 1024**3, mig=True)
    sampler = _GpuSampler(["MIG-abc"], period_s=60, nvml=FakeNvml([A100], [mig]))
    try:
        taken = sampler.take()
    finally:
        sampler.close()
    assert taken["gpu_uuid"] == "MIG-abc" and taken["gpu_util"] == MIG_UTILISATION
    assert "gpu_util_mean" not in taken  # never a made-up zero
    assert taken["gpu_mem_peak_mb"] == 3 * 1024 and taken["gpu_mem_total_mb"] == 10 * 1024
