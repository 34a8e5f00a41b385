"""What the service's studies will run on, so that a submitted study no node could ever hold
is refused with a 422 naming its request and the capacity, instead of queueing a study whose
trials would wait forever.

Each study's driver starts an embedded Ray (``serve --num-cpus``), known at once, or attaches
to the cluster at ``serve --address``, whose nodes are asked for in the background (a child
process) at start and every :data:`REFRESH_S`, as nodes come and go. Until the first answer,
or while the cluster does not answer, submissions are not checked against it: the driver still
refuses such a study before its first trial, with the same message."""

from __future__ import annotations

import logging
import threading
from typing import Any

REFRESH_S = 60.0


class ClusterView:
    """The nodes (as ``ray.nodes()`` has them) of the Ray the service's studies run on."""

    def __init__(self, address: str | None = None, num_cpus: int | None = None, *,
                 refresh_s: float = REFRESH_S):
        self.address, self.num_cpus, self.refresh_s = address, num_cpus, refresh_s
        self._nodes: list[dict[str, Any]] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if not address:
            from searchsvc.usecases import cluster_nodes

            self._nodes = cluster_nodes(None, num_cpus)

    def start(self) -> None:
        """Ask a cluster for its nodes now and every ``refresh_s`` (nothing to do when
        embedded)."""
        if self.address and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="cluster-view",
                                            daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def nodes(self) -> list[dict[str, Any]] | None:
        """The nodes last seen; None while not known."""
        return self._nodes

    def _loop(self) -> None:
        from searchsvc.usecases import cluster_nodes

        while not self._stop.is_set():
            try:
                self._nodes = cluster_nodes(self.address)
            except Exception as exc:  # the driver checks again; say why submissions are not
                logging.getLogger(__name__).warning(
                    "the Ray cluster at %s did not say what it holds (%s); submitted studies "
                    "are checked against it when it does", self.address, exc)
            self._stop.wait(self.refresh_s)


def cluster_capacity(nodes: list[dict[str, Any]] | None) -> dict[str, float] | None:
    """The CPUs and GPUs of the alive ``nodes`` together; None while they are not known."""
    if nodes is None:
        return None
    alive = [n for n in nodes if n.get("Alive", True)]
    return {key: sum(float(n.get("Resources", {}).get(key, 0.0)) for n in alive)
            for key in ("CPU", "GPU")}


def cluster_summary(nodes: list[dict[str, Any]] | None) -> str:
    """``2 node(s): 4 CPUs, 0 GPUs in all``, or that they are not known yet."""
    total = cluster_capacity(nodes)
    if nodes is None or total is None:
        return "not known yet"
    return f"{len(nodes)} node(s): {total['CPU']:g} CPUs, {total['GPU']:g} GPUs in all"
