"""Starting the embedded Ray: a node that timed out starting (Ray's fixed 30 s, on a machine
whose cores are all busy) is started once more, with a line saying why; any other failure, and
any failure to attach to a cluster, is reported at once."""

from __future__ import annotations

from typing import Any

import pytest

from searchsvc.driver import session

SLOW = ("The current node timed out during startup. This could happen because some of the "
        "raylet failed to startup or the GCS has become overloaded.")


class FakeInit:
    def __init__(self, *failures: Exception):
        self.failures, self.calls = list(failures), []  # type: list[Exception], list[dict]
        self.environments: list[dict[str, str]] = []

    def __call__(self, **kwargs: Any) -> None:
        import os

        self.calls.append(kwargs)
        self.environments.append(dict(os.environ))
        if self.failures:
            raise self.failures.pop(0)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    import ray

    from searchsvc.driver import shutdown

    def use(*failures: Exception) -> FakeInit:
        init = FakeInit(*failures)
        monkeypatch.setattr(ray, "init", init)
        monkeypatch.setattr(shutdown, "shutdown_ray", lambda: None)
        return init
    return use


def test_an_embedded_node_that_timed_out_starting_is_started_once_more(fake, capsys) -> None:
    init = fake(Exception(SLOW))
    session._init_ray({"address": "local", "num_cpus": 2}, embedded=True)
    assert init.calls == [{"address": "local", "num_cpus": 2}] * 2
    assert "did not start in time" in capsys.readouterr().err


def test_a_second_timeout_other_failures_and_clusters_are_reported_at_once(fake) -> None:
    init = fake(Exception(SLOW), Exception(SLOW))
    with pytest.raises(Exception, match="timed out during startup"):
        session._init_ray({"address": "local"}, embedded=True)
    assert len(init.calls) == 2
    init = fake(ValueError("bad num_cpus"))
    with pytest.raises(ValueError):
        session._init_ray({"address": "local"}, embedded=True)
    assert len(init.calls) == 1
    init = fake(Exception(SLOW))
    with pytest.raises(Exception, match="timed out"):
        session._init_ray({"address": "10.0.0.1:6380"}, embedded=False)
    assert len(init.calls) == 1


def test_an_embedded_node_prestarts_no_idle_workers_and_the_callers_environment_is_kept(
        fake, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.delenv("RAY_prestart_worker_first_driver", raising=False)
    init = fake()
    session._init_ray({"address": "local"}, embedded=True)
    assert init.environments[0]["RAY_prestart_worker_first_driver"] == "0"
    assert "RAY_prestart_worker_first_driver" not in os.environ
    session._init_ray({"address": "10.0.0.1:6380"}, embedded=False)  # a cluster's own settings
    assert "RAY_prestart_worker_first_driver" not in init.environments[1]
    monkeypatch.setenv("RAY_prestart_worker_first_driver", "1")  # the user's choice wins
    session._init_ray({"address": "local"}, embedded=True)
    assert init.environments[2]["RAY_prestart_worker_first_driver"] == "1"


LIST_NODE_PROCESSES = """
import json, sys, tempfile
import ray
from searchsvc.driver.head import processes_naming
from searchsvc.driver.session import _init_ray, start_embedded_ray

def node_processes(folder):
    return [" ".join(p.info["cmdline"]) for p in processes_naming(folder)]

@ray.remote
def square(x):
    return x * x

seen = {}
for show in (False, True):
    folder = tempfile.mkdtemp(prefix="ssr-")  # short: Ray's sockets lie below it
    start_embedded_ray(num_cpus=1, log_to_driver=show, _temp_dir=folder)
    seen[str(show)] = node_processes(folder)
    ray.shutdown()
# A study's own node that needs no state API (not data-parallel), as ray_session starts it.
folder = tempfile.mkdtemp(prefix="ssr-")
_init_ray({"address": "local", "num_cpus": 1, "include_dashboard": False,
           "log_to_driver": False, "_temp_dir": folder}, embedded=True, state_api=False)
seen["no_state_api"] = node_processes(folder)
seen["squares"] = ray.get([square.remote(x) for x in range(3)])
ray.shutdown()
print(json.dumps(seen))
"""


def test_an_embedded_node_starts_no_monitor_and_a_log_monitor_only_for_shown_output() -> None:
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", LIST_NODE_PROCESSES], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen.pop("squares") == [0, 1, 4]  # a node without an API server runs tasks
    for show, commands in seen.items():
        assert any("gcs_server" in c for c in commands) and any("raylet" in c for c in commands)
        assert not any("autoscaler/_private/monitor.py" in c for c in commands), commands
        assert any("log_monitor.py" in c for c in commands) == (show == "True"), commands
        # The API server (dashboard/dashboard.py, even without a dashboard) only where the
        # node may serve Ray's state API; not on a study's own node that needs none.
        assert any("dashboard/dashboard.py" in c for c in commands) == (
            show != "no_state_api"), commands


@pytest.mark.parametrize("workers", [None, 2])
def test_a_studys_own_node_keeps_the_state_api_only_for_data_parallel_trials(
        fake, monkeypatch: pytest.MonkeyPatch, workers: int | None) -> None:
    """Ray Train's placement-group cleaner asks the state API whether a run's controller is
    alive: a data-parallel study's node keeps its API server; any other study's goes without."""
    from ray._private.node import Node

    from searchsvc.driver import capacity
    from searchsvc.options import RunOptions
    from searchsvc.spec import parse_spec

    original = Node.start_api_server
    seen: list[bool] = []
    fake()  # Ray's own shutdown is not called
    monkeypatch.setattr(capacity, "check_capacity", lambda spec: None)

    def record(**kwargs: Any) -> None:
        seen.append(Node.start_api_server is original)

    monkeypatch.setattr("ray.init", record)
    monkeypatch.setattr("ray.is_initialized", lambda: False)  # whatever this worker ran before
    resources = f"resources: {{cpu: 1, workers: {workers}}}\n" if workers else ""
    spec = parse_spec("study: s\nobjective: m:f\nmetric: loss\nmode: min\nparameters:\n"
                      "  x: {low: 0.0, high: 1.0}\n" + resources)
    with session.ray_session(spec, RunOptions(), search_paths=[]):
        pass
    assert seen == [workers is not None]
    assert Node.start_api_server is original  # restored after the start
