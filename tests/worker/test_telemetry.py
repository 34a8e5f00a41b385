"""The worker's telemetry collector without Ray: step time, samples/s, CPU and RSS, the
data-wait fraction through sdk.data_loader, and GPU fields absent with the reason (no GPU
assigned, or NVML failing), never zeros."""

from __future__ import annotations

import time

import pytest

from searchsvc import sdk
from searchsvc.worker.context import TELEMETRY_KEY, TrialContext, set_current
from searchsvc.worker.telemetry import Telemetry

GPU_FIELDS = ("gpu_util_mean", "gpu_mem_peak_mb", "gpu_mem_total_mb", "gpu_name")


@pytest.fixture
def telemetry(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    collector = Telemetry()
    set_current(TrialContext(telemetry=collector))
    yield collector
    set_current(None)
    collector.close()


def slow(n: int, delay: float):
    for i in range(n):
        time.sleep(delay)
        yield i


def test_a_step_measures_time_samples_cpu_and_memory(telemetry: Telemetry) -> None:
    time.sleep(0.05)
    step = telemetry.step(samples=100)
    assert step["step_time_s"] >= 0.05 and step["samples"] == 100
    assert step["samples_per_s"] == pytest.approx(100 / step["step_time_s"])
    assert step["rss_mb"] > 10 and isinstance(step["cpu_percent"], float)
    assert step["gpu"] == "none assigned" and not any(f in step for f in GPU_FIELDS)
    assert "data_wait_fraction" not in step  # no data_loader: not measured, not 0
    assert "samples_per_s" not in telemetry.step()


def test_the_data_loader_wait_is_a_fraction_of_the_step(telemetry: Telemetry) -> None:
    loader = sdk.data_loader(list(range(4)))
    assert len(loader) == 4  # type: ignore[arg-type]
    assert list(loader) == [0, 1, 2, 3]
    telemetry.step()
    for _ in sdk.data_loader(slow(4, 0.03)):
        pass
    waited = telemetry.step()
    assert waited["data_wait_fraction"] > 0.8 and waited["data_wait_s"] >= 0.12
    for _ in sdk.data_loader(range(4)):
        time.sleep(0.03)  # compute, not waiting
    assert telemetry.step()["data_wait_fraction"] < 0.2


def test_the_wait_for_data_is_a_share_of_the_loop_working_not_of_a_blocked_report(
        telemetry: Telemetry) -> None:
    from searchsvc.worker.trainable import _with_telemetry

    sent: list[dict] = []

    def late_driver(metrics: dict) -> None:  # the driver takes the result late
        sent.append(metrics)
        time.sleep(0.3)

    report = _with_telemetry(late_driver)
    report({"loss": 1.0})
    for _ in sdk.data_loader(slow(4, 0.03)):  # the loop only waits: no compute to oversleep
        pass
    report({"loss": 0.5})
    step = sent[1][TELEMETRY_KEY]
    assert step["report_wait_s"] >= 0.3 and step["data_wait_s"] >= 0.12
    working = step["step_time_s"] - step["report_wait_s"]
    assert step["data_wait_fraction"] == pytest.approx(step["data_wait_s"] / working)
    # Of the step's whole time (0.12 s of 0.42 s at least) it would be under 0.3.
    assert step["data_wait_fraction"] > 0.8


def test_a_failing_nvml_is_stated_not_zero_filled() -> None:
    collector = Telemetry(gpu_ids=["12345"])  # no such GPU, and no NVML library on CPU hosts
    try:
        step = collector.step()
    finally:
        collector.close()
    assert step["nvml"].startswith("unavailable: ")
    assert not any(f in step for f in GPU_FIELDS) and "gpu" not in step


def test_outside_a_trial_the_wrapper_only_passes_items_through() -> None:
    set_current(None)
    assert list(sdk.data_loader(iter("abc"))) == ["a", "b", "c"]


def test_the_time_to_the_first_batch_is_reported_once(telemetry: Telemetry) -> None:
    telemetry.restart()  # the objective is called
    time.sleep(0.02)  # its own setup (a model built, files opened)
    for _ in sdk.data_loader(slow(3, 0.03)):
        pass
    first = telemetry.step()
    assert first["time_to_first_batch_s"] >= 0.05  # setup and the first read, not the rest
    assert first["time_to_first_batch_s"] < first["step_time_s"]
    for _ in sdk.data_loader(range(2)):
        pass
    assert "time_to_first_batch_s" not in telemetry.step()
    telemetry.restart()  # a new trial on the same worker measures its own
    for _ in sdk.data_loader(range(2)):
        pass
    assert "time_to_first_batch_s" in telemetry.step()


def test_the_time_blocked_in_a_report_is_the_next_steps_report_wait(
        telemetry: Telemetry) -> None:
    from searchsvc.worker.trainable import _with_telemetry

    sent: list[dict] = []

    def barrier(metrics: dict) -> None:  # a report that waits for slower ranks
        sent.append(metrics)
        time.sleep(0.1)

    report = _with_telemetry(barrier)
    report({"loss": 1.0})
    assert "report_wait_s" not in sent[0][TELEMETRY_KEY]  # nothing waited before it
    time.sleep(0.02)  # this step's own work
    report({"loss": 0.5})
    step = sent[1][TELEMETRY_KEY]
    assert step["report_wait_s"] >= 0.1  # the first report's wait, inside this step's time
    assert step["step_time_s"] >= step["report_wait_s"] + 0.02
    assert telemetry.step()["report_wait_s"] >= 0.1  # the second report's
    assert "report_wait_s" not in telemetry.step()  # no report since: nothing waited
