"""How a Ray node this process starts is started, and what Ray records of a run's callbacks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def tag_callbacks_without_integrations() -> None:
    """Make Ray Tune's callback usage tag skip its integrations' imports.

    ``tune.run`` tags which callbacks a run uses by comparing them with the classes of its
    MLflow, W&B, Comet and Aim integrations, which it imports for that (MLflow and W&B
    themselves: about a second of CPU and 50 MB in every driver, tracked or not). searchsvc
    passes only its own callbacks, so the tag Ray records for them, "CustomCallback" or
    "CustomLoggerCallback" counts, is recorded here without those imports. Idempotent."""
    from ray.air._internal import usage

    if getattr(usage.tag_callbacks, "searchsvc", False):
        return

    def tag_callbacks(callbacks: list[Any] | None) -> bool:
        from ray.tune import Callback
        from ray.tune.logger import LoggerCallback

        counts: dict[str, int] = {}
        for callback in callbacks or []:
            if isinstance(callback, Callback):
                kind = ("CustomLoggerCallback" if isinstance(callback, LoggerCallback)
                        else "CustomCallback")
                counts[kind] = counts.get(kind, 0) + 1
        if counts:
            usage.record_extra_usage_tag(usage.TagKey.AIR_CALLBACKS, json.dumps(counts))
        return bool(counts)

    tag_callbacks.searchsvc = True  # type: ignore[attr-defined]
    usage.tag_callbacks = tag_callbacks




@contextmanager
def lean_node(*, show_worker_output: bool, state_api: bool = True) -> Iterator[None]:
    """Within: a node ``ray.init`` starts has no autoscaler monitor (one machine never
    autoscales) and, unless the driver shows its workers' output, no log monitor (its only
    reader): two processes that poll while the node runs, 1.3 CPU-s a minute on an idle node.
    Without ``state_api``, it has no API server either: the process behind Ray's state API,
    job submission and dashboard (started even with ``include_dashboard=False``), which costs
    every node a second of CPU to start. Ray Train needs the state API (its placement-group
    cleaner asks it whether the run's controller is alive), so data-parallel studies keep it.
    ``ray.init`` has no argument for any of these; its node parameters and its node do."""
    from ray._private.node import Node
    from ray._private.parameter import RayParams

    original = RayParams.__init__
    start_api_server = Node.start_api_server

    def lean_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.no_monitor = True
        if not show_worker_output:
            self.include_log_monitor = False

    def no_api_server(self: Any, **kwargs: Any) -> None:
        return None

    RayParams.__init__ = lean_init  # type: ignore[method-assign]
    if not state_api:
        Node.start_api_server = no_api_server  # type: ignore[method-assign]
    try:
        yield
    finally:
        RayParams.__init__ = original  # type: ignore[method-assign]
        Node.start_api_server = start_api_server  # type: ignore[method-assign]
