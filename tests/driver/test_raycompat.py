"""The Ray private names searchsvc relies on still exist in the installed Ray, within the
version range raycompat (and pyproject) was checked against."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import ray
from packaging.specifiers import SpecifierSet
from ray._private.node import Node
from ray._private.parameter import RayParams
from ray._raylet import InnerGcsClient
from ray.actor import ActorHandle
from ray.tune.execution.class_cache import _ActorClassCache
from ray.tune.execution.tune_controller import TrialRunnerWrapper, TuneController
from ray.tune.experiment import Trial
from ray.tune.schedulers import AsyncHyperBandScheduler, PopulationBasedTraining
from ray.tune.schedulers.async_hyperband import _Bracket
from ray.tune.utils.object_cache import _ObjectCache

from searchsvc.driver import raycompat

OWNERS = {"_Bracket": _Bracket, "AsyncHyperBandScheduler": AsyncHyperBandScheduler,
          "PopulationBasedTraining": PopulationBasedTraining, "ActorHandle": ActorHandle,
          "TuneController": TuneController, "TrialRunnerWrapper": TrialRunnerWrapper,
          "_ActorClassCache": _ActorClassCache, "Trial": Trial, "RayParams": RayParams,
          "_ObjectCache": _ObjectCache, "Node": Node,
          "InnerGcsClient": InnerGcsClient}


def test_the_installed_ray_is_in_the_checked_range_and_pyproject_pins_it() -> None:
    assert ray.__version__ in SpecifierSet(raycompat.RAY_VERSIONS)
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    [pin] = re.findall(r'"ray\[tune\]([^"]+)"', pyproject)
    assert SpecifierSet(pin) == SpecifierSet(raycompat.RAY_VERSIONS)


def test_every_private_name_still_exists() -> None:
    scheduler = AsyncHyperBandScheduler(metric="m", mode="min", max_t=9, grace_period=1)
    pbt = PopulationBasedTraining(metric="m", mode="min", hyperparam_mutations={"x": [1, 2]})
    instances = {"AsyncHyperBandScheduler": scheduler, "PopulationBasedTraining": pbt,
                 "_Bracket": _Bracket(min_t=1, max_t=9, reduction_factor=3, s=0)}
    missing = []
    for owner, name in raycompat.PRIVATE_NAMES:
        if owner in OWNERS:
            cls = OWNERS[owner]
            instance = instances.get(owner)
            if not (hasattr(cls, name) or (instance is not None and hasattr(instance, name))
                    or _set_in_init(cls, name)):
                missing.append(f"{owner}.{name}")
        elif not hasattr(importlib.import_module(owner), name):
            missing.append(f"{owner}.{name}")
    assert missing == []


def _set_in_init(cls: type, name: str) -> bool:
    """Whether ``cls.__init__`` assigns ``self.<name>`` (instance attributes of classes that
    are awkward to build here), annotated or not."""
    import inspect

    return re.search(rf"self\.{name}\s*(:[^=\n]*)?=", inspect.getsource(cls.__init__)) is not None


def test_tune_tags_searchsvcs_callbacks_without_importing_mlflow_or_wandb() -> None:
    """A driver that tracks nothing never loads MLflow or W&B for Ray's usage tag, and the tag
    still counts its callbacks as Ray counts custom ones."""
    script = """
import sys
from unittest import mock
from ray.air._internal import usage
from ray.tune import Callback
from searchsvc.driver import raycompat

raycompat.tag_callbacks_without_integrations()
raycompat.tag_callbacks_without_integrations()  # idempotent
with mock.patch.object(usage, "record_extra_usage_tag") as record:
    assert usage.tag_callbacks([Callback(), Callback()]) is True
    assert usage.tag_callbacks([]) is False
print(record.call_args.args[1], sorted(m for m in ("mlflow", "wandb") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == '{"CustomCallback": 2} []'


def test_every_worker_of_an_embedded_node_runs_searchsvcs_setup_hook(ray_local) -> None:
    from ray._private import ray_constants

    from searchsvc import startup
    from searchsvc.driver.session import EMBEDDED_NODE_ENV, SETUP_HOOK_VARIABLE

    assert SETUP_HOOK_VARIABLE == ray_constants.WORKER_PROCESS_SETUP_HOOK_ENV_VAR
    assert EMBEDDED_NODE_ENV[SETUP_HOOK_VARIABLE] == startup.WORKER_SETUP_HOOK

    # An actor: always a worker process of its own, fresh from the hook (a task could land on
    # a pooled worker where something has already restored the usual thresholds).
    @ray.remote(num_cpus=0)
    class Threshold:
        def youngest(self) -> int:
            import gc

            return gc.get_threshold()[0]

    probe = Threshold.remote()  # type: ignore[attr-defined]
    assert ray.get(probe.youngest.remote()) == startup.STARTING_THRESHOLD
    ray.kill(probe)
