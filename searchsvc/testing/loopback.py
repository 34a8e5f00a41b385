"""A real multi-node Ray cluster on this machine, for tests: a head and worker nodes started
with ``ray start --block`` on 127.0.0.1, a free port (never Ray's default 6379), token
authentication on, and small object stores. Each node is its own process group, so a test can
kill one node outright.

The cluster keeps everything in a temporary folder of its own (``--temp-dir``), never Ray's
/tmp/ray: ``ray start`` records its address there (``ray_current_cluster``), and a record left
in /tmp/ray would make every later plain ``ray.init()`` on the machine try to join this long
gone cluster. :meth:`LoopbackCluster.stop` ends every process of the cluster and deletes the
folder."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from searchsvc.driver.head import end_ray_folder
from searchsvc.testing.served import free_port

RAY = str(Path(sys.executable).with_name("ray"))
OBJECT_STORE_BYTES = 100 * 1024 * 1024
# The clusters' folders: short (Ray's unix sockets lie below them) and named after the test
# process that started them.
FOLDER_PREFIX = "searchsvc-ray-"
TEMP_PREFIX = f"{FOLDER_PREFIX}{os.getpid()}-"


class NodeExited(RuntimeError):
    """A node of the cluster exited while the cluster waited for its nodes."""


class LoopbackCluster:
    """Start with :meth:`start`, add nodes with :meth:`add_worker`, end with :meth:`stop`."""

    def __init__(self, home: Path):
        home.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.token = secrets.token_hex(16)
        self.temp_dir = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
        # HOME is a fresh folder: no ~/.ray/auth_token, so only the token given here counts.
        # Every driver that connects (each wait_for_nodes probe among them) would otherwise
        # have each node start a worker per CPU it never uses, and every process record
        # metrics that nothing scrapes: CPU the tests on this machine need.
        self.env = {**os.environ, "HOME": str(home), "RAY_AUTH_MODE": "token",
                    "RAY_AUTH_TOKEN": self.token, "RAY_ADDRESS": "",
                    "RAY_prestart_worker_first_driver": "0",
                    "RAY_enable_metrics_collection": "0"}
        self.nodes: list[subprocess.Popen] = []  # alive but for one that just exited
        self.logs: dict[int, Path] = {}  # the output of every node started, by its pid

    def _start(self, *args: str) -> subprocess.Popen:
        # Each node's own output goes to a file beside it: a node that exits says why.
        log = (self.temp_dir / f"node-{len(self.logs)}.log").open("w")
        with log:
            node = subprocess.Popen(
                [RAY, "start", "--block", "--node-ip-address=127.0.0.1",
                 "--disable-usage-stats", f"--object-store-memory={OBJECT_STORE_BYTES}",
                 f"--temp-dir={self.temp_dir}", *args],
                env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.logs[node.pid] = Path(log.name)
        self.nodes.append(node)
        return node

    def start(self, attempts: int = 3) -> LoopbackCluster:
        """A head that runs no trials (no CPUs or GPUs); stopped again if it does not come
        up. A head that exits at once is started again on another port: the free port it was
        given can be taken by another process before Ray binds it."""
        try:
            for attempt in range(1, attempts + 1):
                head = self._start("--head", f"--port={self.port}", "--num-cpus=0",
                                   "--num-gpus=0", "--include-dashboard=false")
                try:
                    self.wait_for_nodes(1)
                    return self
                except NodeExited:
                    if attempt == attempts:
                        raise
                    self.nodes.remove(head)
                    self.port = free_port()
                    self.address = f"127.0.0.1:{self.port}"
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self, cpus: int, gpus: int = 0) -> subprocess.Popen:
        node = self._start(f"--address={self.address}", f"--num-cpus={cpus}",
                           f"--num-gpus={gpus}")
        self.wait_for_nodes(len(self.nodes))
        return node

    def kill(self, node: subprocess.Popen) -> None:
        """The node dies at once with every process it started, as when a machine is lost."""
        os.killpg(node.pid, signal.SIGKILL)
        node.wait()
        self.nodes.remove(node)  # meant to be gone: no longer waited for or stopped

    def wait_for_nodes(self, count: int, timeout: float = 90) -> None:
        script = (
            "import ray, sys, time\n"
            f"ray.init(address='{self.address}', logging_level='ERROR')\n"
            f"deadline = time.time() + {timeout}\n"
            f"while sum(n['Alive'] for n in ray.nodes()) < {count}:\n"
            "    if time.time() > deadline: sys.exit(1)\n"
            "    time.sleep(0.5)\n")
        deadline = time.time() + timeout
        while True:  # the head may not listen yet
            with tempfile.TemporaryFile("w+") as errors:
                probe = subprocess.Popen([sys.executable, "-c", script], env=self.env,
                                         stdout=subprocess.DEVNULL, stderr=errors, text=True)
                while probe.poll() is None and time.time() < deadline + 30:
                    self._check_nodes(probe)
                    time.sleep(0.2)
                if probe.poll() is None:
                    probe.kill()
                probe.wait()
                errors.seek(0)
                stderr = errors.read()
            if probe.returncode == 0:
                return
            if time.time() > deadline:
                raise RuntimeError(f"the loopback cluster did not reach {count} nodes:\n"
                                   f"{stderr[-2000:]}")
            time.sleep(1)

    def _check_nodes(self, probe: subprocess.Popen) -> None:
        """Raise NodeExited (after ending ``probe``) when a node this cluster started has
        exited, rather than wait for it."""
        for node in self.nodes:
            if node.poll() is not None:
                probe.kill()
                probe.wait()
                raise NodeExited(f"a loopback Ray node exited ({node.returncode}): {node.args!r}"
                                 f"\n{self.logs[node.pid].read_text()[-2000:]}")

    def stop(self) -> None:
        """End every node at once (SIGKILL to each node's process group: a test's cluster keeps
        nothing worth a graceful stop, which takes a worker node whose peer was killed 10 s or
        more); then any of its processes that left their node's process group, and its folder
        (:func:`searchsvc.driver.head.end_ray_folder`)."""
        for node in reversed(self.nodes):
            if node.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.pid, signal.SIGKILL)
        for node in self.nodes:
            node.wait()
        end_ray_folder(self.temp_dir)
