"""``resources.gpu: auto`` end to end on CPU: an embedded Ray with one logical GPU, a fake NVML
(a ``pynvml`` module first on the workers' import path) that says the GPU is 10% busy with
15 GiB of its 80 GiB in use, and an objective whose trial 2 runs out of GPU memory below half
a GPU. The first trial runs on the whole GPU; memory (4 x 15 x 1.2 <= 80 < 8 x 15 x 1.2), not
utilisation (8 x 10% would fit), limits the rest to 4 per GPU; trial 2 runs again at 0.5 and
counts once. A subprocess: the fake NVML and the GPU must be there when Ray starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FAKE_NVML = '''
"""A fake NVML: one 80 GiB GPU, 10% busy, 15 GiB in use (no per-process list, as in a
container, so the device's memory is what a trial is measured to use)."""


class NVMLError(Exception):
    pass


NVML_CLOCK_SM = 1
DEVICE = "fake-gpu-0"


def nvmlInit(): pass
def nvmlShutdown(): pass
def nvmlDeviceGetCount(): return 1
def nvmlDeviceGetHandleByIndex(index): return DEVICE
def nvmlDeviceGetHandleByUUID(uuid): return DEVICE
def nvmlDeviceGetName(handle): return b"Fake GPU 80GB"
def nvmlDeviceGetUUID(handle): return "GPU-fake-0"
def nvmlDeviceIsMigDeviceHandle(handle): return 0
def nvmlDeviceGetCudaComputeCapability(handle): return (9, 0)
def nvmlDeviceGetNumGpuCores(handle): return 16896
def nvmlDeviceGetMaxClockInfo(handle, clock): return 1980
def nvmlDeviceGetComputeRunningProcesses(handle): raise NVMLError("Not Supported")


class _Rates:
    gpu = 10


class _Memory:
    used = 15 * 1024 ** 3
    total = 80 * 1024 ** 3


def nvmlDeviceGetUtilizationRates(handle): return _Rates()
def nvmlDeviceGetMemoryInfo(handle): return _Memory()
'''

OBJECTIVE = '''
import time

import ray

from searchsvc import sdk


def train(config):
    share = ray.get_runtime_context().get_assigned_resources().get("GPU", 0.0)
    if sdk.trial_context().number == 2 and share < 0.5:
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (planted)")
    for step in range(1, 4):
        time.sleep(0.3)  # the NVML sampler's period is 0.25 s
        sdk.report({"loss": config["x"] + 1.0 / step, "gpu_share": share})
'''

STUDY = """\
study: auto
objective: auto_objective:train
metric: loss
mode: min
searcher: random
budget: {trials: 6, max_steps: 3}
resources: {cpu: 2, gpu: auto}
noise: off
parameters:
  x: {low: 0.0, high: 1.0}
"""

RUN = '''
import json
import sys

from searchsvc import usecases
from searchsvc.driver import RunOptions
from searchsvc.store import open_store

store = open_store()
done = usecases.run(usecases.validate(sys.argv[1]), store, RunOptions(num_cpus=2, num_gpus=1),
                    preflight=False)
study = store.get_study("auto")
trials = [{"number": t.number, "state": str(t.state), "attempts": t.attempts,
           "share": t.final_metrics.get("gpu_share")} for t in store.get_trials("auto")]
report = json.loads((done.report.folder / "report.json").read_text())
print(json.dumps({"state": str(study.state), "total": study.total_trials,
                  "decision": study.provenance.get("gpu_auto"), "trials": trials,
                  "findings": report["findings"]}))
'''


def test_gpu_auto_packs_by_the_measured_memory_and_retries_an_oom_once(tmp_path: Path) -> None:
    fake = tmp_path / "fake_nvml"
    fake.mkdir()
    (fake / "pynvml.py").write_text(textwrap.dedent(FAKE_NVML))
    (tmp_path / "auto_objective.py").write_text(textwrap.dedent(OBJECTIVE))
    (tmp_path / "auto.yaml").write_text(STUDY)
    (tmp_path / "run.py").write_text(textwrap.dedent(RUN))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(fake), *filter(None, [os.environ.get("PYTHONPATH")]),
         str(Path(__file__).resolve().parents[2])])}
    proc = subprocess.run([sys.executable, str(tmp_path / "run.py"), str(tmp_path / "auto.yaml")],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    decision = out["decision"]
    assert decision["measured_trials"] == [0]
    assert decision["gpu_mem_peak_mb"] == 15 * 1024 and decision["gpu_util_mean"] == 10
    assert (decision["trials_per_gpu"], decision["gpu"], decision["cpu"]) == (4, 0.25, 0.5)
    assert "exceed the GPU's" in decision["limit"]  # memory, not utilisation, limited it
    assert decision["oom_retries"] == [2] and decision["retry_gpu"] == 0.5
    trials = {t["number"]: t for t in out["trials"]}
    assert out["state"] == "completed" and out["total"] == 6 and len(trials) == 6
    assert all(t["state"] == "completed" for t in trials.values())
    assert trials[0]["share"] == 1.0  # the measured trial held the whole GPU
    assert {trials[n]["share"] for n in (1, 3, 4, 5)} == {0.25}
    assert (trials[2]["share"], trials[2]["attempts"]) == (0.5, 2)  # counted once, retried
    assert any(f.startswith("GPU packing (resources.gpu: auto): trial 0 ran on a whole GPU, "
                            "10% busy with a peak of 15.0 GiB of 80 GiB; the rest ran 4 per "
                            "GPU (gpu: 0.25, 0.5 CPUs each)") and "trial 2 ran out of GPU "
               "memory at gpu: 0.25 and ran again at gpu: 0.5" in f for f in out["findings"])
