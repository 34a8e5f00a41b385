"""Trackers run off the study's loop: a call returns once queued, a slow tracker gets every call
in order from the trackers' own thread, a full queue makes the study wait (once warned, nothing
dropped), and the end of the study waits until every call has been made."""

from __future__ import annotations

import threading

from searchsvc.tracking import Trackers
from tests.tracking.test_tracking_spec import Recorder


class Stuck(Recorder):
    """A tracker whose server does not answer until ``answer`` is set."""

    def __init__(self) -> None:
        super().__init__("stuck")
        self.answer = threading.Event()
        self.threads: set[str] = set()

    def _call(self, what: str) -> None:
        self.threads.add(threading.current_thread().name)
        self.answer.wait()
        super()._call(what)


def test_a_stuck_tracker_never_holds_up_the_caller_and_gets_every_call_in_order() -> None:
    stuck = Stuck()
    trackers = Trackers([stuck])
    for _ in range(10):
        trackers.trial_started(None)  # type: ignore[arg-type]
    trackers.trial_finished(None)  # type: ignore[arg-type]
    # Every call returned while the tracker's server has not answered the first one.
    assert stuck.calls == []
    stuck.answer.set()
    trackers.close()  # waits for every call
    assert stuck.calls == ["trial_started"] * 10 + ["trial_finished", "close"]
    assert stuck.threads == {"searchsvc-tracking"}


def test_a_full_queue_makes_the_study_wait_once_warned_and_drops_nothing() -> None:
    stuck = Stuck()
    shown: list[str] = []
    trackers = Trackers([stuck], notify=shown.append, queue_size=2)
    # One call in the tracker and two queued fill it: the 4th call must wait, until the server
    # answers (a second from now, on another thread).
    answer = threading.Timer(1.0, stuck.answer.set)
    answer.start()
    for _ in range(8):
        trackers.trial_started(None)  # type: ignore[arg-type]
    trackers.study_finished(None, None)  # type: ignore[arg-type]
    answer.join()
    assert stuck.calls == ["trial_started"] * 8 + ["study_finished"]  # all made, in order
    assert len([m for m in shown if "tracking is behind the study" in m]) == 1
    trackers.close()


def test_without_trackers_nothing_is_started() -> None:
    trackers = Trackers([])
    trackers.trial_started(None)  # type: ignore[arg-type]
    trackers.close()
    assert trackers._thread is None and not trackers
