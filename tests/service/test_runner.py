"""The service's job runner and a driver that cannot get its study going: after a few failed
launches in a row the study is failed with the driver's last line as the reason, instead of
being relaunched forever with nothing in the API saying why; a driver that ran its study, or
was cancelled, never counts."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from searchsvc.core import StudyState
from searchsvc.service.runner import DRIVER_NICENESS, MAX_FAILED_LAUNCHES, StudyRunner
from searchsvc.store import InMemoryStore, Store


def queued(store: Store, name: str) -> None:
    store.create_study(name=name, metric="loss", mode="min", searcher="random", spec_text="",
                       spec_file="<request>", total_trials=4, results_dir=None, provenance={},
                       owner="ada")


def drivers(monkeypatch: pytest.MonkeyPatch, runner: StudyRunner, code: str) -> list:
    """Each launch runs ``code`` in Python (as a driver process would run), its output in the
    study's log; the launches made, in order."""
    launched: list[str] = []

    def launch(name: str) -> subprocess.Popen:
        launched.append(name)
        assert runner.logs is not None
        runner.logs.mkdir(parents=True, exist_ok=True)
        log = (runner.logs / f"{name}.log").open("a")
        return subprocess.Popen([sys.executable, "-c", code], stdout=log,
                                stderr=subprocess.STDOUT)

    monkeypatch.setattr(runner, "_launch", launch)
    return launched


def tick_until(runner: StudyRunner, done, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the runner did not get there"
        runner.tick()
        time.sleep(0.05)


def test_a_driver_failing_before_its_study_runs_fails_the_study_with_why(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    store = InMemoryStore()
    queued(store, "stuck")
    runner = StudyRunner(store, logs=tmp_path / "logs")
    launched = drivers(monkeypatch, runner, "import sys\nprint('starting')\n"
                       "print('could not start Ray locally: Exception: timed out')\n"
                       "sys.exit(1)")
    tick_until(runner, lambda: store.get_study("stuck").state == StudyState.FAILED)
    assert launched == ["stuck"] * MAX_FAILED_LAUNCHES
    failure = store.get_study("stuck").provenance["failure"]
    assert failure == (f"its driver exited with code 1 {MAX_FAILED_LAUNCHES} times in a row "
                       "before the study could run: could not start Ray locally: Exception: "
                       "timed out")
    for _ in range(5):  # and it is not launched again
        runner.tick()
    assert launched == ["stuck"] * MAX_FAILED_LAUNCHES and not runner.running


def test_a_driver_that_ran_or_stopped_its_study_resets_the_count(tmp_path: Path) -> None:
    store = InMemoryStore()
    queued(store, "fine")
    runner = StudyRunner(store, logs=tmp_path / "logs")
    for _ in range(MAX_FAILED_LAUNCHES - 1):
        runner._judge_exit("fine", 1)
    assert runner.failed_launches == {"fine": MAX_FAILED_LAUNCHES - 1}
    runner._judge_exit("fine", 0)  # it ran (a study resumed later starts counting anew)
    assert runner.failed_launches == {}
    for _ in range(MAX_FAILED_LAUNCHES - 1):
        runner._judge_exit("fine", 1)
    store.update_study("fine", state=StudyState.INTERRUPTED)
    runner._judge_exit("fine", 130)  # Ctrl-C or cancel: the study says it stopped
    assert runner.failed_launches == {}
    study = store.get_study("fine")
    assert study.state == StudyState.INTERRUPTED and "failure" not in study.provenance


def test_drivers_run_niced_by_default_and_at_the_services_priority_at_zero() -> None:
    store = InMemoryStore()
    niced = StudyRunner(store).driver_command("s")
    plain = StudyRunner(store, driver_niceness=0).driver_command("s")
    assert niced == [shutil.which("nice"), "-n", str(DRIVER_NICENESS), *plain]
    assert plain[0] == sys.executable and plain[3:6] == ["resume", "s", "--storage"]
    with pytest.raises(ValueError, match=r"0\.\.19 \(got 20\)"):
        StudyRunner(store, driver_niceness=20)
