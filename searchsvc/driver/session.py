"""The Ray a study runs on: the one already initialised in this process, an embedded node
started for the run, or a cluster attached by address; and the settings an embedded node
starts with."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

from searchsvc.errors import RunnerError
from searchsvc.options import RunOptions
from searchsvc.spec import StudySpec
from searchsvc.startup import WORKER_SETUP_HOOK
from searchsvc.worker.objective import module_root
from searchsvc.worker.workdir import NO_TRIAL_DIR_CHANGE


@contextmanager
def ray_session(spec: StudySpec, options: RunOptions, *, search_paths: Sequence[str],
                code: str | None = None) -> Iterator[None]:
    """The run's Ray session, started or attached once for preflight and the study: the Ray
    already initialised in this process as it is, else one started (embedded) or attached
    (``options.address``) for the block and shut down after it. ``code``: the study's code
    bundle, every worker's working directory (and import path); ``search_paths``: where its
    objective is imported from (provenance.objective_paths, computed once by the use case);
    attached to a cluster without ``code``, the objective's top-level package is
    shipped to the workers from there."""
    import ray

    from searchsvc.driver.capacity import check_capacity

    if options.address and options.address.strip().lower().startswith("ray://"):
        raise RunnerError(
            f"--address {options.address}: Ray Client (ray://) is not supported: Tune would run "
            "away from the process that records the trials. Run the driver on a node of the "
            "cluster (the head, `ray job submit`, or after `ray start --address=HOST:PORT`) "
            "and give --address HOST:PORT or auto")
    if ray.is_initialized():
        check_capacity(spec)
        yield
        return
    kwargs: dict[str, Any] = {"logging_level": logging.ERROR,
                              "log_to_driver": options.verbose}
    runtime_env: dict[str, Any] = {"working_dir": code} if code else {}
    if options.address:
        root = module_root(spec.objective, search_paths)
        if root is not None and code is None:
            runtime_env["py_modules"] = [str(root)]
        kwargs["address"] = options.address
    if runtime_env:
        kwargs["runtime_env"] = runtime_env
    if not options.address:
        # "local": embedded even when `ray start` left a cluster's address on this machine.
        kwargs.update(address="local", num_cpus=options.num_cpus, num_gpus=options.num_gpus,
                      include_dashboard=False)
    try:
        _check_cluster_answers(options.address)
        _init_ray(kwargs, embedded=not options.address,
                  state_api=spec.resources.data_parallel)
    except Exception as exc:
        where = f"at {options.address}" if options.address else "locally"
        silent = isinstance(exc, ClusterRefused) and exc.kind == "silent"
        hint = (" If the cluster uses token authentication (Ray's default since 2.60), give "
                "this process its token: RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or "
                "RAY_AUTH_TOKEN_PATH, default ~/.ray/auth_token)."
                if options.address and not silent else "")
        raise RunnerError(
            f"could not start Ray {where}: {type(exc).__name__}: {exc}.{hint}") from None
    try:
        check_capacity(spec)  # before any task waits for resources that never come
        yield
    finally:
        from searchsvc.driver.shutdown import shutdown_ray

        shutdown_ray()


# How long a cluster's head may take to answer an attaching driver: one that is still starting
# answers within seconds; ray.init itself would wait for minutes on an address where nothing
# listens.
CLUSTER_ANSWER_WAIT_S = 20.0


class ClusterRefused(ConnectionError):
    """The cluster at the address refused this process (``kind`` "token"), or nothing answered
    there ("silent")."""

    def __init__(self, kind: str, why: str):
        super().__init__(why)
        self.kind = kind


def _check_cluster_answers(address: str | None) -> None:
    """Raise :class:`ClusterRefused` when a cluster given by HOST:PORT refuses this process's
    token or does not answer at all, before ``ray.init`` retries either for a long time."""
    if not address or address.strip().lower() == "auto":
        return  # embedded, or the address Ray finds itself
    from searchsvc.driver.raycompat import gcs_problem

    problem = gcs_problem(address.strip(), wait_s=CLUSTER_ANSWER_WAIT_S)
    if problem is not None:
        raise ClusterRefused(*problem)


# What Ray raises when a node it started did not register within its fixed 30 s: on a machine
# whose cores are all busy (other studies, a test suite), a start that would succeed a moment
# later.
_SLOW_NODE_START = "timed out during startup"


def _init_ray(kwargs: dict[str, Any], *, embedded: bool, state_api: bool = True) -> None:
    """``ray.init(**kwargs)``; an embedded Ray that timed out starting is stopped and started
    once more, with a line saying why (an attached cluster's failure is reported at once). An
    embedded node starts lean (raycompat.lean_node): no autoscaler monitor, no log monitor
    when the driver does not show its workers' output, and no API server without
    ``state_api`` (which a study's own node needs only for Ray Train)."""
    import ray

    from searchsvc.driver.raycompat import lean_node

    lean = lean_node(show_worker_output=kwargs.get("log_to_driver", True),
                     state_api=state_api) if embedded else nullcontext()
    with embedded_node_settings(embedded), lean:
        try:
            ray.init(**kwargs)
        except Exception as exc:
            if not embedded or _SLOW_NODE_START not in str(exc):
                raise
            from searchsvc.driver.shutdown import shutdown_ray

            shutdown_ray()  # the half-started node's processes
            print(f"searchsvc: Ray's node did not start in time ({exc}); the machine may be "
                  "busy, starting it once more", file=sys.stderr)
            ray.init(**kwargs)
        if embedded and ray.is_initialized():
            _EMBEDDED.update(address=ray.get_runtime_context().gcs_address,
                             environment=dict(os.environ))


def start_embedded_ray(**kwargs: Any) -> None:
    """Start an embedded Ray node in this process as a study's run does (``ray.init`` with
    ``address="local"``, no dashboard, errors only, and EMBEDDED_NODE_ENV), for callers that
    keep one Ray for several studies; ``kwargs`` go to ``ray.init``."""
    _init_ray({"address": "local", "include_dashboard": False, "logging_level": logging.ERROR,
               **kwargs}, embedded=True)


# The node this process started last (its GCS address) and the environment it started with,
# which every one of its workers inherits.
_EMBEDDED: dict[str, Any] = {}


def embedded_environment() -> dict[str, str] | None:
    """The environment every worker of the Ray this process is connected to inherits, when
    this process started that Ray (an embedded node); None for a cluster it attached to (whose
    workers inherit their own node's environment) or when not connected."""
    import ray

    if not _EMBEDDED or not ray.is_initialized():
        return None
    if ray.get_runtime_context().gcs_address != _EMBEDDED["address"]:
        return None
    return dict(_EMBEDDED["environment"])


# The variable Ray's default worker reads its setup hook from (ray_constants.
# WORKER_PROCESS_SETUP_HOOK_ENV_VAR, private: tests/driver/test_raycompat.py checks the name).
SETUP_HOOK_VARIABLE = "__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR"

# Ray starts a worker process per CPU as soon as a driver connects, in the job's default
# environment: a study with a code folder (a service's uploaded code, a cluster's working
# directory) never uses them, and one without starts its trials' workers as fast on demand.
# Each is a Python process importing Ray (about 2 CPU-seconds) on a machine the study needs.
# PL_DISABLE_FORK: what Ray Tune sets for every trial worker (the node's workers inherit it, so
# Tune's per-worker runtime environment that would only repeat it can be left out; see
# raycompat.trainables_inherit_node_environment). NO_TRIAL_DIR_CHANGE: the driver sets it too
# (driver/tune_run.py), which Tune passes on to every trainable; a node started before that
# module was imported (a CLI run's) would otherwise miss it, and every trial worker would get
# a runtime environment of its own after all.
# RAY_TRAIN_ENABLE_PREEMPTION_WATCHER: Ray Train starts an actor per data-parallel trial that
# polls for nodes being drained (spot instances taken back); one machine's own node is never
# drained, so it would only cost a process (about 2 CPU-seconds) per trial.
# RAY_enable_metrics_collection: every Ray process records and exports metrics for a
# Prometheus that scrapes the node's agent; a node without a dashboard has no reader, and the
# collection costs an idle node a quarter of its CPU (1.8 -> 1.4 CPU-s a minute).
# SETUP_HOOK_VARIABLE: every worker process runs searchsvc.startup's hook first, collecting
# garbage rarely while it imports Ray Tune and the objective's libraries (about a fifth less
# CPU for a trial worker's start); set on the node, not as the job's runtime environment, which
# would give every trial worker a runtime environment of its own.
EMBEDDED_NODE_ENV = {"RAY_prestart_worker_first_driver": "0", "PL_DISABLE_FORK": "1",
                     "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0",
                     "RAY_enable_metrics_collection": "0", **NO_TRIAL_DIR_CHANGE,
                     SETUP_HOOK_VARIABLE: WORKER_SETUP_HOOK}


@contextmanager
def embedded_node_settings(embedded: bool) -> Iterator[None]:
    """Within: the environment an embedded Ray node starts with (EMBEDDED_NODE_ENV, where the
    user has not set the variable); the caller's own environment is left as it was."""
    added = {k: v for k, v in EMBEDDED_NODE_ENV.items() if embedded and k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)
