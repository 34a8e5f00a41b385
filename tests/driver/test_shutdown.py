"""The driver's Ray ends without ending the driver."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_collection_in_another_thread_during_shutdown_does_not_kill_the_driver() -> None:
    """Ray Tune leaves cycles holding ObjectRefs; a thread of the driver (the trackers') that
    allocates while Ray shuts down would trigger their collection inside Ray's teardown, and
    Ray would end the process with exit code 1 after a study that finished. Without the
    collector held off, this script exits 1 in nearly every run."""
    script = """
import threading
import ray
from searchsvc.driver.shutdown import shutdown_ray

ray.init(address="local", num_cpus=1, include_dashboard=False, logging_level="ERROR")

@ray.remote
def f(i):
    return i

cycles = []
refs = [f.remote(i) for i in range(2000)]
ray.get(refs)
for ref in refs:
    cycle = {"ref": ref}
    cycle["self"] = cycle
    cycles.append(cycle)
del refs, ref, cycle
go = threading.Event()

def allocate():  # drops one cycle at a time and allocates as any busy thread does
    go.wait()
    while cycles:
        cycles.pop()
        junk = [[] for _ in range(3000)]

threading.Thread(target=allocate, daemon=True).start()
go.set()
shutdown_ray()
print("shut down")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "shut down"


def test_a_runs_embedded_ray_has_ended_when_its_report_is_written(tmp_path: Path) -> None:
    """The report needs no Ray: the node's processes, and the driver's share of Ray's memory,
    are gone before it is written (and the study's trials are all in the store by then)."""
    (tmp_path / "quick.py").write_text(
        "from searchsvc import sdk\n\n\n"
        "def train(config):\n    sdk.report({'loss': config['x']})\n")
    (tmp_path / "study.yaml").write_text(
        "study: quick\nobjective: quick:train\nmetric: loss\nmode: min\nsearcher: random\n"
        "noise: off\nbudget: {trials: 2, max_concurrent: 1, max_steps: 1}\n"
        "parameters:\n  x: {low: 0.1, high: 1.0}\n")
    script = """
import ray
from searchsvc import usecases
from searchsvc.store import SqlStore

seen = []
write = usecases.report

def report(name, store, *args, **kwargs):
    seen.append((ray.is_initialized(), len(store.get_trials(name))))
    return write(name, store, *args, **kwargs)

usecases.report = report
store = SqlStore("sqlite:///db.sqlite")
ran = usecases.run(usecases.validate("study.yaml"), store,
                   usecases.RunOptions(num_cpus=1, live_progress=False), preflight=False)
print(ran.outcome.study.state, seen, sorted(ran.report.files))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == (
        "completed [(False, 2)] ['csv', 'html', 'json', 'md', 'next_study']")
