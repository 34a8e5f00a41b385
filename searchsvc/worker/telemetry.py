"""Per-trial telemetry, collected in the trial's worker process without the objective doing
anything: at every step it reports (through :func:`searchsvc.sdk.report`, or by returning its
result), the wall time of the step, samples/s when it said how many examples the step
processed, the process's CPU and resident memory (psutil), the fraction of the step spent
waiting for data when its loop iterates :func:`searchsvc.sdk.data_loader`, and the utilisation
and memory of the GPU(s) Ray assigned it, sampled by NVML (``nvidia-ml-py``) in a background
thread every :data:`GPU_SAMPLE_S` seconds.

What cannot be measured is **absent, with the reason**: a trial without a GPU has no GPU fields
and ``"gpu": "none assigned"``; one whose NVML fails has ``"nvml": "unavailable: <reason>"``.
Never zeros. The step's telemetry travels to the driver inside the Ray result under
:data:`searchsvc.worker.context.TELEMETRY_KEY`, kept apart from the objective's metrics."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from searchsvc.core.telemetry import working_time
from searchsvc.worker.gpus import MIG_UTILISATION, resolve

GPU_SAMPLE_S = 0.25  # NVML sampling period
MB = 1024 * 1024


def assigned_gpus() -> list[str]:
    """The GPUs this trial holds: Ray's assignment inside a Ray worker (none when the trial
    asked for none, whatever ``CUDA_VISIBLE_DEVICES`` says), else the ids in
    ``CUDA_VISIBLE_DEVICES`` (physical indices or UUIDs, as NVML names them)."""
    if "ray" in sys.modules:
        try:
            import ray

            if ray.is_initialized():
                return [str(i) for i in ray.get_gpu_ids()]
        except Exception:  # outside a Ray worker
            pass
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    return [v.strip() for v in visible.split(",") if v.strip() and v.strip() != "-1"]


class _GpuSampler:
    """NVML samples of the assigned GPUs' utilisation and memory, in a daemon thread. Each
    :meth:`take` returns the summary since the previous one."""

    def __init__(self, gpu_ids: list[str], period_s: float = GPU_SAMPLE_S, *,
                 nvml: Any = None, order: str | None = None):
        """``nvml``: the ``pynvml`` module (a fake one in tests); ``order``: the
        ``CUDA_DEVICE_ORDER`` the ids are numbered in (default: this process's)."""
        if nvml is None:
            import pynvml  # type: ignore[import-untyped]

            nvml = pynvml
        self.nvml = nvml
        nvml.nvmlInit()
        try:
            order = os.environ.get("CUDA_DEVICE_ORDER") if order is None else order
            self.gpus = resolve(nvml, gpu_ids, order)
            self.handles = [g.handle for g in self.gpus]
            self.names = [g.name for g in self.gpus]
            self.total_mb = sum(nvml.nvmlDeviceGetMemoryInfo(h).total for h in self.handles) / MB
        except Exception:
            nvml.nvmlShutdown()
            raise
        self.gpu_ids, self.period_s, self.pid = gpu_ids, period_s, os.getpid()
        self.lock = threading.Lock()
        self.utils: list[float] = []
        self.samples = 0
        self.peak_mb: float | None = None
        self.scope = "process"
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="searchsvc-gpu-telemetry",
                                       daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stopping.is_set():
            with contextlib.suppress(Exception):  # a transient NVML error loses one sample
                self._sample()
            self.stopping.wait(self.period_s)

    def _sample(self) -> None:
        nvml = self.nvml
        # A MIG instance has no utilisation in NVML: the others' mean, or none at all.
        whole = [g.handle for g in self.gpus if not g.mig]
        util = (sum(nvml.nvmlDeviceGetUtilizationRates(h).gpu for h in whole) / len(whole)
                if whole else None)
        used, scope = 0.0, "process"
        for handle in self.handles:
            mine = None
            try:
                for proc in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                    if proc.pid == self.pid and proc.usedGpuMemory is not None:
                        mine = (mine or 0) + proc.usedGpuMemory
            except nvml.NVMLError:
                mine = None
            if mine is None:  # not listed (e.g. another PID namespace): the whole device's
                mine, scope = nvml.nvmlDeviceGetMemoryInfo(handle).used, "device"
            used += mine
        with self.lock:
            if util is not None:
                self.utils.append(float(util))
            self.samples += 1
            self.peak_mb = max(self.peak_mb or 0.0, used / MB)
            if scope == "device":
                self.scope = "device"

    def _taken(self) -> tuple[list[float], int, float | None]:
        with self.lock:
            found = self.utils, self.samples, self.peak_mb
            self.utils, self.samples, self.peak_mb = [], 0, None
        return found

    def take(self) -> dict[str, Any]:
        utils, samples, peak = self._taken()
        if not samples:  # a step shorter than the sampling period: sample it now
            try:
                self._sample()
            except Exception as exc:
                return {"nvml": f"unavailable: {type(exc).__name__}: {exc}"}
            utils, samples, peak = self._taken()
        out: dict[str, Any] = {
            "gpu_ids": list(self.gpu_ids), "gpu_name": ", ".join(self.names),
            "gpu_uuid": ", ".join(g.uuid for g in self.gpus), "gpu_mem_peak_mb": peak,
            "gpu_mem_total_mb": self.total_mb, "gpu_mem_scope": self.scope,
            "gpu_samples": samples}
        if utils:
            out["gpu_util_mean"] = sum(utils) / len(utils)
        if any(g.mig for g in self.gpus):
            out["gpu_util"] = MIG_UTILISATION
        return out

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=2 * self.period_s + 1)
        with contextlib.suppress(Exception):
            self.nvml.nvmlShutdown()




class Telemetry:
    """One trial's collector: :meth:`step` at each report gives that step's telemetry."""

    def __init__(self, gpu_ids: list[str] | None = None,
                 where: Mapping[str, Any] | None = None):
        """``where``: fields every step carries as they are (a data-parallel worker's rank,
        node and host)."""
        self.where = dict(where or {})
        self.last = self.trial_started = time.perf_counter()
        self.first_batch_s: float | None = None  # trial start to its first batch
        self.first_batch_told = False
        self.waited_s = 0.0  # waiting in a data_loader's next() since the last step
        self.loader_used = False
        self.loader_workers: int | None = None  # the data loader's worker processes
        # Blocked in the last report call: on a data-parallel trial's workers Ray Train's report
        # is a barrier, so a rank that waits there waited for a slower one.
        self.report_wait_s: float | None = None
        self.process: Any = None
        self.process_error: str | None = None
        try:
            import psutil  # type: ignore[import-untyped]

            self.process = psutil.Process()
            self.process.cpu_percent(None)  # starts the measuring interval
        except Exception as exc:
            self.process_error = f"unavailable: {type(exc).__name__}: {exc}"
        self.gpu_ids = assigned_gpus() if gpu_ids is None else gpu_ids
        self.sampler: _GpuSampler | None = None
        self.gpu_absent: dict[str, str] = {}
        if not self.gpu_ids:
            self.gpu_absent = {"gpu": "none assigned"}
        else:
            try:
                self.sampler = _GpuSampler(self.gpu_ids)
            except Exception as exc:  # no driver, no library, a bad id
                self.gpu_absent = {"nvml": f"unavailable: {type(exc).__name__}: {exc}"}

    def restart(self) -> None:
        """Start the next step's clock now (the objective is about to be called: its import
        and the worker's setup are not part of its first step)."""
        self.last = self.trial_started = time.perf_counter()
        self.first_batch_s, self.first_batch_told = None, False
        self.waited_s, self.report_wait_s = 0.0, None
        if self.process is not None:
            with contextlib.suppress(Exception):
                self.process.cpu_percent(None)

    def waited(self, seconds: float) -> None:
        self.waited_s += seconds
        self.loader_used = True

    def loader_started(self, workers: int) -> None:
        """A data loader with ``workers`` worker processes began: the CPUs it keeps busy are
        what packing must leave each trial (core/packing.py)."""
        self.loader_workers = max(self.loader_workers or 0, workers)

    def reported(self, seconds: float) -> None:
        """The report call just made blocked for ``seconds``: the next step's time includes
        them, and its ``report_wait_s`` says how much of it was that wait."""
        self.report_wait_s = seconds

    def batch_arrived(self, at: float) -> None:
        """A batch came from ``sdk.data_loader`` at ``at`` (perf_counter): the first one times
        the trial's start to its first batch (workers started, files opened, first reads)."""
        if self.first_batch_s is None:
            self.first_batch_s = at - self.trial_started

    def step(self, samples: int | float | None = None) -> dict[str, Any]:
        now = time.perf_counter()
        step_time = now - self.last
        out: dict[str, Any] = {**self.where, "step_time_s": step_time}
        if samples is not None:
            out["samples"] = samples
            if step_time > 0:
                out["samples_per_s"] = samples / step_time
        if self.first_batch_s is not None and not self.first_batch_told:
            out["time_to_first_batch_s"] = self.first_batch_s
            self.first_batch_told = True
        if self.report_wait_s is not None:
            out["report_wait_s"] = min(self.report_wait_s, step_time)
            self.report_wait_s = None
        if self.loader_used:
            out["data_wait_s"] = self.waited_s
            # Of the loop's working time: the time blocked handing the last report over is
            # the driver's (late on a busy machine), not the loop's, and would dilute it.
            working = working_time(out) or 0.0
            out["data_wait_fraction"] = min(self.waited_s / working, 1.0) if working > 0 \
                else 0.0
        if self.loader_workers is not None:
            out["loader_workers"] = self.loader_workers
        if self.process is not None:
            try:
                out["cpu_percent"] = self.process.cpu_percent(None)
                out["rss_mb"] = self.process.memory_info().rss / MB
            except Exception as exc:
                out["psutil"] = f"unavailable: {type(exc).__name__}: {exc}"
        else:
            out["psutil"] = self.process_error
        if self.sampler is not None:
            out.update(self.sampler.take())
        else:
            out.update(self.gpu_absent)
        torch = sys.modules.get("torch")
        if torch is not None:
            try:
                if torch.cuda.is_available() and torch.cuda.is_initialized():
                    out["torch_max_allocated_mb"] = torch.cuda.max_memory_allocated() / MB
            except Exception:
                pass
        self.waited_s = 0.0
        self.last = time.perf_counter()  # the time spent here is not the next step's
        return out

    def close(self) -> None:
        if self.sampler is not None:
            self.sampler.close()
            self.sampler = None


class TimedLoader:
    """An iterable that times how long each ``next()`` of the wrapped one takes and tells the
    running trial's telemetry (and, under preflight, its input check). ``workers``: the
    wrapped loader's worker processes (default: its ``num_workers``, else 0). ``len()`` and
    other attributes pass through."""

    def __init__(self, iterable: Iterable[Any], workers: int | None = None):
        self.iterable = iterable
        self.workers = (int(getattr(iterable, "num_workers", 0) or 0) if workers is None
                        else int(workers))

    def __iter__(self) -> Iterator[Any]:
        from searchsvc.worker import preflight
        from searchsvc.worker.context import current

        telemetry = current().telemetry
        if telemetry is not None:
            telemetry.loader_started(self.workers)
        preflight.loader_started(self.workers)
        asked = time.perf_counter()
        iterator = iter(self.iterable)  # a DataLoader starts its workers here: counted too
        while True:
            try:
                item = next(iterator)
            except StopIteration:
                return
            got = time.perf_counter()
            telemetry = current().telemetry
            if telemetry is not None:
                telemetry.waited(got - asked)
                telemetry.batch_arrived(got)
            yield item
            done = time.perf_counter()
            preflight.record_batch(got - asked, done - got, item)
            asked = done

    def __len__(self) -> int:
        return len(self.iterable)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        if name == "iterable":
            raise AttributeError(name)
        return getattr(self.iterable, name)
