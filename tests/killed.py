"""A study run from the command line as a user would, its driver and Ray killed (SIGKILL) in the
middle, then resumed with ``searchsvc resume``: what the tests of "nothing reported is lost"
share."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from searchsvc.core import TrialState
from searchsvc.store import SqlStore

ROOT = Path(__file__).resolve().parents[1]


def searchsvc(*args: str, home: Path, cwd: Path, **kwargs: Any) -> subprocess.Popen:
    """``searchsvc ARGS`` in a new process, with SEARCHSVC_HOME ``home``, in ``cwd`` (the
    repository importable, for its objectives)."""
    env = {**os.environ, "SEARCHSVC_HOME": str(home),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "searchsvc.cli", *args], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)


def kill_and_resume(folder: Path, study: str, *, start_timeout_s: float = 180,
                    resume_timeout_s: float = 300,
                    until: Callable[[SqlStore], bool] | None = None,
                    between: Callable[[], None] | None = None) -> tuple[SqlStore, str]:
    """Run ``folder/study.yaml`` (study name ``study``; home ``folder/home``), kill it once two
    trials have completed and another has reported (or once ``until(store)``), call
    ``between()`` if given, and resume it to the end. Returns the store and the resume's
    output; fails when either run does."""
    home = folder / "home"
    store = SqlStore(f"sqlite:///{home / 'searchsvc.db'}")
    proc = searchsvc("run", "study.yaml", "--num-cpus", "2", "--no-preflight", home=home,
                     cwd=folder, start_new_session=True)
    deadline = time.monotonic() + start_timeout_s
    while True:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline, "the study did not progress in time"
        try:
            if until is not None and until(store):
                break
            trials = store.get_trials(study)
        except Exception:
            trials = []
        done = sum(t.state == TrialState.COMPLETED for t in trials)
        if until is None and done >= 2 and any(
                t.state == TrialState.RUNNING and t.last_step for t in trials):
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    if between is not None:
        between()
    resume = searchsvc("resume", study, "--num-cpus", "2", home=home, cwd=folder)
    output, _ = resume.communicate(timeout=resume_timeout_s)
    assert resume.returncode == 0, output
    return store, output
