"""After every other test (tests/conftest.py orders the ``last`` tests at the end): the suite left
no Ray behind. None of its clusters still runs, and ``/tmp/ray/ray_current_cluster``, the
address a plain ``ray.init()`` joins, was not written by it, so a user's plain
``ray.init(num_cpus=2)`` on this machine still starts a Ray of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from searchsvc.testing.served import processes_naming
from tests.driver.loopback import TEMP_PREFIX

ADDRESS_FILE = Path("/tmp/ray/ray_current_cluster")  # Ray's default temp dir, TMPDIR unset


def address_file_state() -> tuple[str, float] | None:
    try:
        return ADDRESS_FILE.read_text(), ADDRESS_FILE.stat().st_mtime
    except FileNotFoundError:
        return None


BEFORE = address_file_state()  # read when the tests are collected, before any runs

PLAIN_RAY = """
import ray
ray.init(num_cpus=2, include_dashboard=False)
assert ray.cluster_resources()["CPU"] == 2
ray.shutdown()
"""


@pytest.mark.last
@pytest.mark.slow
def test_the_suite_leaves_no_ray_cluster_behind(tmp_path: Path) -> None:
    loopback = Path(tempfile.gettempdir()) / TEMP_PREFIX
    assert [p.info["cmdline"] for p in processes_naming(str(loopback))] == []
    assert not list(loopback.parent.glob(TEMP_PREFIX + "*"))
    assert address_file_state() in (None, BEFORE), f"the tests wrote {ADDRESS_FILE}"
    if BEFORE is not None:
        pytest.skip(f"{ADDRESS_FILE} was there before the tests began ({BEFORE[0]}): a plain "
                    "ray.init() here joins that cluster whatever the tests do")
    # A user's shell: no RAY_* variables, nothing from this session's environment.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", PLAIN_RAY], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not ADDRESS_FILE.exists()
