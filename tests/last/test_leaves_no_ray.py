"""After every other test (tests/conftest.py orders the ``last`` tests at the end): the suite left
no Ray behind. No loopback cluster outlived the test process that started it, and a user's plain
``ray.init(num_cpus=2)`` on this machine still starts a Ray of its own: no
``/tmp/ray/ray_current_cluster`` (the address such a call joins) was left."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from searchsvc.testing.loopback import FOLDER_PREFIX, TEMP_PREFIX
from searchsvc.testing.served import processes_naming

ADDRESS_FILE = Path("/tmp/ray/ray_current_cluster")  # Ray's default temp dir, TMPDIR unset

PLAIN_RAY = """
import ray
ray.init(num_cpus=2, include_dashboard=False)
assert ray.cluster_resources()["CPU"] == 2
ray.shutdown()
"""


def left_behind() -> list[list[str]]:
    """The command lines of the loopback clusters' processes whose test process has ended
    (or is this one)."""
    found = []
    for process in processes_naming(str(Path(tempfile.gettempdir()) / FOLDER_PREFIX)):
        cmdline = process.info["cmdline"]
        owners = {int(pid) for argument in cmdline
                  for pid in re.findall(rf"{FOLDER_PREFIX}(\d+)-", argument)}
        if any(pid == os.getpid() or not psutil.pid_exists(pid) for pid in owners):
            found.append(cmdline)
    return found


@pytest.mark.last
@pytest.mark.slow
def test_the_suite_leaves_no_ray_behind(tmp_path: Path) -> None:
    assert left_behind() == []
    assert not list(Path(tempfile.gettempdir()).glob(TEMP_PREFIX + "*"))
    # A user's shell: no RAY_* variables, nothing from this session's environment.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", PLAIN_RAY], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    left = ADDRESS_FILE.read_text() if ADDRESS_FILE.exists() else None
    assert left is None, (f"{ADDRESS_FILE} names {left}: a plain ray.init() joins that cluster "
                          "(a `ray start` without `ray stop` leaves it)\n" + done.stderr[-3000:])
    assert done.returncode == 0, done.stderr[-3000:]
