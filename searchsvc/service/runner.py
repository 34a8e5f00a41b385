"""Runs the service's studies: each in its own ``searchsvc resume`` process (its own Ray driver,
so studies never share Tune's state and a crash takes one study down, not the service), at most
``max_running`` at a time, oldest first, all on one Ray: the cluster at ``--address``, else a
head the service starts on loopback (``searchsvc.driver.head``) and keeps across restarts. A
study left ``running`` by a driver that died (the service or its machine was killed) is
resumed; cancel stops a study like Ctrl-C does."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from searchsvc.allocation.allowance import ALLOWANCE_ENV
from searchsvc.core import StudyRecord, StudyState
from searchsvc.core.judging import FAILURE_KEY
from searchsvc.service.capacity import ClusterView, cluster_capacity
from searchsvc.service.sharing import ClusterShares, queue_view
from searchsvc.store import Store

# Drivers run at a lower CPU priority than the service, and so does the embedded Ray each one
# starts (its processes inherit it): a study that keeps every core busy must not make API calls
# wait for a CPU (benchmarks/service_load.py: p99 of 1.3 s against 0.3 s on 2 cores). When the
# API is idle it costs the study nothing.
DRIVER_NICENESS = 10

# A study whose driver exits with an error this many times in a row while the study is still
# queued or running (it never got going: Ray could not start, its store refused it) is marked
# failed with the driver's last line as the reason, instead of being relaunched forever.
MAX_FAILED_LAUNCHES = 3

MAX_RUNNING = 4  # studies driven at once by default; the allocator shares the cluster


class StudyRunner:
    """The service's job runner: starts a driver process per study, within ``max_running``,
    and gives each its allowance of the shared cluster (:class:`ClusterShares`). Not a trial
    scheduler: what runs inside a study is Ray Tune's and its scheduler's
    (``searchsvc.driver.schedulers``)."""

    def __init__(self, store: Store, *, address: str | None = None,
                 max_running: int = MAX_RUNNING,
                 num_cpus: int | None = None, logs: Path | None = None, poll_s: float = 0.5,
                 driver_niceness: int = DRIVER_NICENESS, home: Path | None = None,
                 preemption: bool = True):
        if not 0 <= driver_niceness <= 19:
            raise ValueError(f"driver niceness must be in 0..19 (got {driver_niceness})")
        self.driver_niceness = driver_niceness
        self.store, self.address, self.max_running = store, address, max_running
        self.num_cpus, self.logs, self.poll_s = num_cpus, logs, poll_s
        # Without --address: the head this service runs its studies on, recorded in ``home``
        # (started or attached in the scheduling thread, before the first study launches).
        self.home = home
        self.head: Any = None  # a searchsvc.driver.head.Head once started or attached
        self.cluster = ClusterView(address, num_cpus)  # what the studies will run on
        # How the studies share it (with somewhere to write their drivers' allowances).
        # ``preemption``: a study of higher priority has lower ones pause trials at their next
        # checkpoint (driver/preemption.py) instead of waiting for them to end.
        self.shares = (ClusterShares(home / "allowances", preemption=preemption)
                       if home is not None else None)
        self.running: dict[str, subprocess.Popen] = {}
        self.failed_launches: dict[str, int] = {}  # a study's driver exits in error, in a row
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.cluster.start()
        self._thread = threading.Thread(target=self._loop, name="study-runner", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop scheduling; running studies go on in their own processes."""
        self._stop.set()
        self.cluster.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def cancel(self, name: str) -> None:
        """Stop study ``name``: a queued one never starts, a running one stops as on Ctrl-C
        (its running trials are marked interrupted; it can be resumed)."""
        with self._lock:
            process = self.running.get(name)
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)
                return
            study = self.store.get_study(name)
            if study.state in (StudyState.CREATED, StudyState.RUNNING):
                self.store.update_study(name, state=StudyState.INTERRUPTED, driver={})

    def requeue(self, name: str) -> None:
        """Queue a stopped study to run its unfinished trials."""
        with self._lock:
            self.store.update_study(name, state=StudyState.CREATED)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:  # a store hiccup must not end scheduling; try again next tick
                logging.getLogger(__name__).exception("scheduling failed; retrying")
            self._stop.wait(self.poll_s)

    def tick(self) -> None:
        with self._lock:
            for name, process in list(self.running.items()):
                code = process.poll()
                if code is not None:
                    del self.running[name]
                    self._judge_exit(name, code)
            # Only queued and running studies: this runs every poll_s in the API's process.
            studies = self.store.list_studies(states=(StudyState.CREATED, StudyState.RUNNING))
            starting = self._to_launch(studies)
            if self.shares is not None:  # the allowances are there before a driver asks
                self.shares.update([s for s in studies if s.name in self.running
                                    or s.name in starting],
                                   cluster_capacity(self.cluster.nodes()),
                                   self.store.get_quotas())
            for name in starting:
                self.running[name] = self._launch(name)

    def queue(self, user: str) -> dict[str, Any]:
        """The queue as ``user`` may see it (:func:`~searchsvc.service.sharing.queue_view`)."""
        with self._lock:
            studies = self.store.list_studies(states=(StudyState.CREATED, StudyState.RUNNING))
            return queue_view(user, studies, driven=set(self.running), shares=self.shares,
                              max_running=self.max_running,
                              capacity=cluster_capacity(self.cluster.nodes()))

    def _to_launch(self, studies: list[StudyRecord]) -> list[str]:
        """The studies of ``studies`` to start a driver for now, oldest first, within
        ``max_running``: queued ones, and running ones whose driver died."""
        starting: list[str] = []
        for study in studies:
            if len(self.running) + len(starting) >= self.max_running:
                break
            if study.owner is not None and study.name not in self.running and (
                    study.state == StudyState.CREATED
                    or (study.state == StudyState.RUNNING and not _driver_alive(study))):
                starting.append(study.name)
        return starting

    def _own_head(self) -> None:
        """Before a driver launches without ``--address``: this service's own head, attached
        or (re)started here when it does not answer (the first study, or after a ``ray
        stop``)."""
        if self.address or self.home is None:
            return
        if self.head is None or not self.head.answers():
            from searchsvc import usecases

            self.head = usecases.own_ray_head(self.home, num_cpus=self.num_cpus,
                                              niceness=self.driver_niceness)
            logging.getLogger(__name__).info("studies run on the Ray at %s", self.head.address)

    def _judge_exit(self, name: str, code: int) -> None:
        """A driver ended with exit ``code``: after :data:`MAX_FAILED_LAUNCHES` failures in a
        row that left its study queued or running, the study is failed with the reason."""
        study = self.store.get_study(name)
        if code == 0 or study.state not in (StudyState.CREATED, StudyState.RUNNING):
            self.failed_launches.pop(name, None)
            return
        failed = self.failed_launches[name] = self.failed_launches.get(name, 0) + 1
        if failed < MAX_FAILED_LAUNCHES:
            return
        del self.failed_launches[name]
        said = _last_line(self.logs / f"{name}.log") if self.logs is not None else ""
        failure = (f"its driver exited with code {code} {failed} times in a row before the "
                   f"study could run" + (f": {said}" if said else ""))
        logging.getLogger(__name__).error("study %s failed: %s", name, failure)
        self.store.update_study(name, state=StudyState.FAILED, driver={},
                                provenance={**study.provenance, FAILURE_KEY: failure})

    def driver_command(self, name: str) -> list[str]:
        """The command that drives study ``name``: ``searchsvc resume`` on this runner's
        store and cluster, under ``nice`` at the driver niceness (none at 0)."""
        command = [sys.executable, "-m", "searchsvc.cli", "resume", name,
                   "--storage", self.store.url]
        address = self.address or (self.head.address if self.head is not None else None)
        if address:
            command += ["--address", address]
        elif self.num_cpus:
            command += ["--num-cpus", str(self.num_cpus)]
        nice = shutil.which("nice")  # it execs the driver: same pid, same process group
        if nice is not None and self.driver_niceness > 0:
            command = [nice, "-n", str(self.driver_niceness), *command]
        return command

    def _launch(self, name: str) -> subprocess.Popen:
        self._own_head()
        command = self.driver_command(name)
        log = subprocess.DEVNULL
        if self.logs is not None:
            self.logs.mkdir(parents=True, exist_ok=True)
            log = (self.logs / f"{name}.log").open("a")  # type: ignore[assignment]
        env = {**os.environ, **(self.head.driver_env() if self.head is not None else {})}
        if self.shares is not None:
            env[ALLOWANCE_ENV] = str(self.shares.file_for(name))
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
        if self.driver_niceness > 0:
            _lower_priority_of_session(process.pid, self.driver_niceness)
        return process


def _last_line(log: Path) -> str:
    """The last non-blank line of a driver's log (empty when there is none)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return next((line.strip() for line in reversed(lines) if line.strip()), "")


def _lower_priority_of_session(pid: int, niceness: int) -> None:
    """Linux with autogroup scheduling (sched_autogroup_enabled) shares the CPUs fairly between
    sessions, whatever the nice values inside them: the driver's new session (its whole study)
    gets ``niceness`` as a group, not only each of its processes."""
    autogroup = Path(f"/proc/{pid}/autogroup")
    try:
        if autogroup.exists():
            autogroup.write_text(f"{niceness}\n")
    except OSError:  # not allowed, or already gone: the study runs at the service's priority
        pass


def _driver_alive(study: StudyRecord) -> bool:
    """Whether the process driving ``study`` still runs (True when it is on another host: that
    host's service is in charge of it)."""
    driver = study.driver or {}
    if not driver:
        return False  # running with no driver on record: nobody drives it
    if driver.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(driver["pid"]), 0)
    except (ProcessLookupError, ValueError, TypeError, KeyError):
        return False
    except PermissionError:
        return True
    return True
