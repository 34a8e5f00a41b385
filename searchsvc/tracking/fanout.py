"""Feeds every tracker of a study, off the study's own loop and so that no tracker can fail the
study: calls go through a bounded queue that one thread serves, in order, so a slow tracking
server never delays Ray Tune's bookkeeping; the first exception a tracker raises is logged
once, with what failed, and that tracker is left out from then on."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from searchsvc.core import Measurement, StudyRecord, TrialRecord
from searchsvc.core.durations import format_duration
from searchsvc.spec import StudySpec
from searchsvc.tracking.base import ReportFolder, Tracker

LOG = logging.getLogger("searchsvc.tracking")
# Shown by the run's progress display (``notify``); an application's own logging gets the record
# too, and Python's last-resort handler does not print it a second time.
LOG.addHandler(logging.NullHandler())


QUEUE_CALLS = 10_000  # calls waiting for the trackers before the study waits for them
DRAIN_WARN_S = 10.0  # at the end, how long to wait before saying what is being waited for
DRAIN_LIMIT_S = 600.0  # ... and before giving up (a resume brings the trackers level)


class Trackers(Tracker):
    """A tracker that forwards each call to its trackers, in order, from a thread of its own,
    and disables one that raises, with a single warning (the ``searchsvc.tracking`` logger,
    and ``notify`` when given: the run's progress display).

    A call returns once queued. When ``queue_size`` calls wait already, the caller waits for
    room (nothing is dropped) and a warning says once that tracking is behind. ``study_finished``
    and ``close`` wait until every queued call has been made (saying so after DRAIN_WARN_S)."""

    name = "trackers"

    def __init__(self, trackers: Sequence[Tracker] = (),
                 notify: Callable[[str], None] | None = None, *,
                 queue_size: int = QUEUE_CALLS):
        self.trackers = list(trackers)
        self.notify = notify
        self.failed: dict[str, str] = {}  # tracker name -> the warning it got
        self._calls: queue.Queue[tuple[str, tuple[Any, ...]] | None] = queue.Queue(queue_size)
        self._thread: threading.Thread | None = None
        self._warned_full = False

    def __bool__(self) -> bool:
        return bool(self.trackers)

    def _each(self, call: str, *args: Any) -> None:
        """Queue ``call`` for every tracker (nothing to do without trackers)."""
        if not self.trackers:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="searchsvc-tracking",
                                            daemon=True)
            self._thread.start()
        try:
            self._calls.put_nowait((call, args))
        except queue.Full:
            if not self._warned_full:
                self._warned_full = True
                self._tell(f"tracking is behind the study ({self._calls.maxsize} calls "
                           "waiting): the study waits for it; nothing is dropped")
            self._calls.put((call, args))

    def _serve(self) -> None:
        while True:
            item = self._calls.get()
            try:
                if item is not None:
                    self._call_each(*item)
            finally:
                self._calls.task_done()
            if item is None:
                return

    def drain(self) -> None:
        """Wait until every queued call has been made; say so when it takes long."""
        if self._thread is None:
            return
        started, warned = time.monotonic(), False
        while self._calls.unfinished_tasks:
            waited = time.monotonic() - started
            if waited > DRAIN_LIMIT_S:
                self._tell(f"tracking: gave up waiting after {format_duration(waited)} with "
                           f"{self._calls.qsize()} calls left; a resume brings the trackers "
                           "level with the store")
                return
            if waited > DRAIN_WARN_S and not warned:
                warned = True
                self._tell(f"waiting for tracking to finish ({self._calls.qsize()} calls "
                           "left)")
            time.sleep(0.05)

    def _tell(self, message: str) -> None:
        LOG.warning(message)
        if self.notify is not None:
            try:
                self.notify(message)
            except Exception:  # the progress display must not fail the study either
                LOG.debug("could not show the tracking warning", exc_info=True)

    def _call_each(self, call: str, args: tuple[Any, ...]) -> None:
        for tracker in list(self.trackers):
            try:
                getattr(tracker, call)(*args)
            except Exception as exc:
                self._disable(tracker, call, exc)

    def _disable(self, tracker: Tracker, call: str, exc: Exception) -> None:
        self.trackers.remove(tracker)
        detail = " ".join(str(exc).split())[:500] or type(exc).__name__
        message = (f"tracking: {tracker.name} failed ({call}: {type(exc).__name__}: {detail}); "
                   f"the study goes on without {tracker.name} tracking")
        self.failed[tracker.name] = message
        self._tell(message)
        try:
            tracker.close()
        except Exception:
            LOG.debug("closing %s after its failure", tracker.name, exc_info=True)

    def study_started(self, study: StudyRecord, spec: StudySpec,
                      trials: Sequence[TrialRecord]) -> None:
        self._each("study_started", study, spec, trials)

    def sync(self, trials: Sequence[TrialRecord]) -> None:
        self._each("sync", trials)

    def trial_started(self, trial: TrialRecord) -> None:
        self._each("trial_started", trial)

    def measurements(self, trial: TrialRecord, items: Sequence[Measurement]) -> None:
        if items:
            self._each("measurements", trial, items)

    def trial_finished(self, trial: TrialRecord) -> None:
        self._each("trial_finished", trial)

    def study_finished(self, study: StudyRecord, report: ReportFolder | None) -> None:
        self._each("study_finished", study, report)
        self.drain()

    def close(self) -> None:
        self._each("close")
        self.drain()
        if self._thread is not None:
            self._calls.put(None)  # the thread ends after the calls before it
            self._thread.join(timeout=5)
            self._thread = None
