"""Feeds every tracker of a study, so that no tracker can fail the study: the first exception a
tracker raises is logged once, with what failed, and that tracker is left out from then on."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from searchsvc.core import Measurement, StudyRecord, TrialRecord
from searchsvc.spec import StudySpec
from searchsvc.tracking.base import ReportFolder, Tracker

LOG = logging.getLogger("searchsvc.tracking")
# Shown by the run's progress display (``notify``); an application's own logging gets the record
# too, and Python's last-resort handler does not print it a second time.
LOG.addHandler(logging.NullHandler())


class Trackers(Tracker):
    """A tracker that forwards each call to its trackers and disables one that raises, with a
    single warning (the ``searchsvc.tracking`` logger, and ``notify`` when given: the run's
    progress display)."""

    name = "trackers"

    def __init__(self, trackers: Sequence[Tracker] = (),
                 notify: Callable[[str], None] | None = None):
        self.trackers = list(trackers)
        self.notify = notify
        self.failed: dict[str, str] = {}  # tracker name -> the warning it got

    def __bool__(self) -> bool:
        return bool(self.trackers)

    def _each(self, call: str, *args: Any) -> None:
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
        LOG.warning(message)
        if self.notify is not None:
            try:
                self.notify(message)
            except Exception:  # the progress display must not fail the study either
                LOG.debug("could not show the tracking warning", exc_info=True)
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

    def close(self) -> None:
        self._each("close")
