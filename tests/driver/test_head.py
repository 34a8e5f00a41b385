"""The service's one Ray (searchsvc.driver.head): started once on loopback with a token, attached
to while it answers, recorded for the service's user only, ended by stop_head, and started anew
when it is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from searchsvc.driver.head import (
    STATE_FILE,
    Head,
    own_head,
    processes_naming,
    read_head,
    stop_head,
)
from searchsvc.driver.session import EMBEDDED_NODE_ENV

pytestmark = pytest.mark.slow


def test_a_head_starts_once_is_attached_after_and_starts_anew_when_gone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    head = own_head(home, num_cpus=1)
    try:
        assert head.answers() and head.address.startswith("127.0.0.1:")
        assert read_head(home) == head
        assert own_head(home, num_cpus=1) == head  # attached: no second head
        assert (home / STATE_FILE).stat().st_mode & 0o077 == 0  # its token: the user's alone
        assert head.driver_env() == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": head.token}
        # Lean: no autoscaler monitor, no log monitor (the service's drivers show no output).
        commands = _commands_naming(head.temp_dir)
        assert any("raylet" in c for c in commands), commands
        assert not any("monitor.py" in c for c in commands), commands
        agents = _renamed_children_of_raylet(head.temp_dir)
        assert agents  # the raylet's agents, which no longer name the folder
        # A study's driver attached to it knows what its workers inherit (so Tune's per-trial
        # runtime environment can be left out); attached from another home, it does not.
        assert _node_environment_seen(head, home) == repr(EMBEDDED_NODE_ENV)
        assert _node_environment_seen(head, tmp_path / "elsewhere") == "None"
        stop_head(home)
        assert not head.answers() and read_head(home) is None
        assert not [p for p in agents if p.is_running() and p.status() != "zombie"]
        # Nothing else of it either: `ray start` leaves its other processes (a Ray Client
        # server) to init, naming the head only by its GCS port.
        port = head.address.rsplit(":", 1)[1]
        assert not [p.info["cmdline"] for p in processes_naming(f":{port}")
                    if p.is_running() and p.status() != "zombie"]
        again = own_head(home, num_cpus=1)
        # A new head: a new token (its port may be the old one's, free again)
        assert again.answers() and again.token != head.token
    finally:
        stop_head(home)
    assert read_head(home) is None


def _node_environment_seen(head: Head, home: Path) -> str:
    script = ("import ray\nfrom searchsvc.driver.head import node_environment\n"
              f"ray.init(address={head.address!r}, logging_level='ERROR')\n"
              "print('SEEN', repr(node_environment()))\n")
    env = {**os.environ, **head.driver_env(), "SEARCHSVC_HOME": str(home), "RAY_ADDRESS": ""}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120)
    seen = [line for line in done.stdout.splitlines() if line.startswith("SEEN ")]
    assert seen, done.stdout + done.stderr[-2000:]
    return seen[0][len("SEEN "):]


def _commands_naming(folder: str) -> list[str]:
    return [" ".join(p.info["cmdline"]) for p in processes_naming(folder)]


def _renamed_children_of_raylet(folder: str) -> list:
    raylets = [p for p in processes_naming(folder) if "raylet" in p.info["cmdline"][0]]
    return [c for r in raylets for c in r.children()
            if not any(folder in a for a in c.cmdline())]
