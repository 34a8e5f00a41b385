"""The one Ray a service runs every study on: a head node on loopback that the service starts
(``ray start``) and every study's driver attaches to, so that a study does not pay for a Ray of
its own (about 4 s and as many CPU-seconds, per study).

The head outlives the service that started it, as the studies' drivers do: a killed service's
running trials go on, and the restarted service attaches to the same head (recorded in its
home, :data:`STATE_FILE`) or starts a new one when it is gone. ``ray stop`` ends it, or
:func:`stop_head` for the one a home records."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from searchsvc.driver.session import EMBEDDED_NODE_ENV, embedded_environment
from searchsvc.errors import RunnerError

STATE_FILE = "service-ray.json"
# Ray's unix sockets lie below its temporary folder, whose path must stay short.
TEMP_PREFIX = "searchsvc-ray-"
START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Head:
    """A running head: where drivers attach (``address``), the token they attach with, and
    the folder that holds its sessions (every process of it names this folder)."""

    address: str
    token: str
    temp_dir: str

    def driver_env(self) -> dict[str, str]:
        """What a driver's environment needs to attach (Ray's token authentication)."""
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    def answers(self, timeout_s: float = 2.0) -> bool:
        """Whether something listens at the head's port."""
        host, _, port = self.address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_s):
                return True
        except OSError:
            return False


def own_head(home: Path, *, num_cpus: int | None = None, num_gpus: int | None = None,
             niceness: int = 0) -> Head:
    """The head recorded in ``home`` if it still answers, else a new one started with
    ``num_cpus``/``num_gpus`` (None: what the machine has) at ``niceness`` (its processes, and
    so every trial, run at that priority) and recorded there. Raises RunnerError, with Ray's
    own last lines, when it cannot start."""
    recorded = read_head(home)
    if recorded is not None and recorded.answers():
        return recorded
    head = _start(num_cpus, num_gpus, niceness)
    home.mkdir(parents=True, exist_ok=True)
    state = home / STATE_FILE
    state.touch(mode=0o600)  # the token: readable by the service's user only
    state.write_text(json.dumps(asdict(head)))
    return head


def read_head(home: Path) -> Head | None:
    """The head ``home`` records, if any (whether it still runs or not)."""
    try:
        return Head(**json.loads((home / STATE_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def node_environment() -> dict[str, str] | None:
    """What every worker of the Ray this process is connected to is known to inherit: the
    whole environment of an embedded node this process started (session.embedded_environment),
    EMBEDDED_NODE_ENV on the service's own head (which :func:`own_head` starts with those values
    over the service's environment, for every study's driver to attach to), else None."""
    import ray

    found = embedded_environment()
    if found is not None or not ray.is_initialized():
        return found
    from searchsvc.store import searchsvc_home

    head = read_head(searchsvc_home())
    if head is None or not _runs_in(ray.get_runtime_context().gcs_address, head.temp_dir):
        return None
    return dict(EMBEDDED_NODE_ENV)


@functools.lru_cache(maxsize=8)
def _runs_in(gcs_address: str, temp_dir: str) -> bool:
    """Whether the Ray at ``gcs_address`` is the one whose folder is ``temp_dir``, asked of
    its GCS once (Tune asks for every trial worker it starts). Known by its folder, which each
    of its nodes' sockets live in: the address Ray reports names the machine's own IP, not the
    loopback one the head was started on."""
    import ray

    return any(str(node.get("ObjectStoreSocketName", "")).startswith(temp_dir + os.sep)
               for node in ray.nodes())


def stop_head(home: Path) -> None:
    """End the head ``home`` records, with every process of it, and forget it."""
    head = read_head(home)
    if head is None:
        return
    end_ray_folder(head.temp_dir, also=_client_server_of(head))
    (home / STATE_FILE).unlink(missing_ok=True)


def _client_server_of(head: Head) -> list:
    """The head's Ray Client server (psutil processes): `ray start` leaves it to init, and its
    command line names the head by its GCS port only (``--address=IP:PORT``), never the folder.
    Ray always starts one (no option turns it off)."""
    port = head.address.rsplit(":", 1)[1]
    return [p for p in processes_naming("ray.util.client.server")
            if any(a.startswith("--address=") and a.endswith(f":{port}")
                   for a in p.info["cmdline"] or ())]


def end_ray_folder(temp_dir: str | Path, also: Sequence[Any] = ()) -> None:
    """SIGKILL every process of the Ray whose temporary folder is ``temp_dir`` (each names it
    on its command line, or is a child of one that does: the raylet's agents and workers
    rename themselves ``ray::...``), as ``ray stop`` would but for this Ray alone, then delete
    the folder. ``also``: more of its processes (psutil), found otherwise."""
    import psutil  # type: ignore[import-untyped]

    folder = str(temp_dir)
    named = [*processes_naming(folder), *also]
    mine = list({p.pid: p for p in [*named, *_descendants(named)]}.values())
    for process in mine:
        with contextlib.suppress(psutil.Error):
            process.send_signal(signal.SIGKILL)
    psutil.wait_procs(mine, timeout=10)
    shutil.rmtree(folder, ignore_errors=True)


def processes_naming(text: str | Path) -> list:
    """The processes (psutil) with ``text`` in an argument of their command line: a Ray's own
    processes name its temporary folder (those the raylet starts rename themselves
    ``ray::...``), a study's drivers its database."""
    import psutil

    text = str(text)
    return [p for p in psutil.process_iter(["cmdline"])
            if any(text in argument for argument in p.info["cmdline"] or ())]


def _descendants(processes: list) -> list:
    """Every living descendant of ``processes`` (psutil processes)."""
    import psutil

    found = []
    for process in processes:
        with contextlib.suppress(psutil.Error):
            found.extend(process.children(recursive=True))
    return found


def _start(num_cpus: int | None, num_gpus: int | None, niceness: int) -> Head:
    ports = _free_ports(4)
    head = Head(address=f"127.0.0.1:{ports[0]}", token=secrets.token_hex(16),
                temp_dir=tempfile.mkdtemp(prefix=TEMP_PREFIX))
    command = [str(Path(sys.executable).with_name("ray")), "start", "--head",
               "--node-ip-address=127.0.0.1", f"--port={ports[0]}",
               f"--dashboard-port={ports[1]}", f"--dashboard-agent-listen-port={ports[2]}",
               f"--ray-client-server-port={ports[3]}", "--include-dashboard=false",
               "--disable-usage-stats", f"--temp-dir={head.temp_dir}",
               # Lean, as an embedded node (raycompat.lean_node): the service's drivers never
               # show their workers' output, and a head on one machine never autoscales.
               "--include-log-monitor=false", "--no-monitor"]
    if num_cpus is not None:
        command.append(f"--num-cpus={num_cpus}")
    if num_gpus is not None:
        command.append(f"--num-gpus={num_gpus}")
    nice = shutil.which("nice")
    if nice is not None and niceness > 0:
        command = [nice, "-n", str(niceness), *command]
    env = {**os.environ, **EMBEDDED_NODE_ENV, **head.driver_env(), "RAY_ADDRESS": ""}
    # Its own session: a signal to the service's process group does not reach it.
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=START_TIMEOUT_S, start_new_session=True)
    if done.returncode != 0:
        raise RunnerError("could not start the service's Ray: "
                          + " | ".join(done.stderr.strip().splitlines()[-3:]))
    deadline = time.monotonic() + START_TIMEOUT_S
    while not head.answers():
        if time.monotonic() > deadline:
            raise RunnerError(f"the service's Ray at {head.address} did not answer in "
                              f"{START_TIMEOUT_S:.0f} s")
        time.sleep(0.2)
    return head


def _free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports of 127.0.0.1 that nothing listens on now (never Ray's
    defaults, which another Ray on the machine may hold)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()
