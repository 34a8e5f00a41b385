"""Live progress of a running study: trials done/total, running, failed, best so far.

On a terminal it is one live line (rich); in logs and CI it prints a line per finished trial.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

from searchsvc.core import (
    FINISHED_TRIAL_STATES,
    TRIAL_COMPLETED,
    TRIAL_FAILED,
    TRIAL_INFEASIBLE,
    improves,
)


class Progress:
    """Counts trials as the runner reports them and shows the study's state."""

    def __init__(self, study: str, total: int, metric: str, mode: str, *,
                 finished_before: int = 0, failed_before: int = 0,
                 best_before: float | None = None, stream: TextIO | None = None,
                 live: bool | None = None):
        self.study, self.total, self.metric, self.mode = study, total, metric, mode
        self.done, self.failed, self.best = finished_before, failed_before, best_before
        self.best_number: int | None = None
        self.running: set[int] = set()
        self.started_at = time.monotonic()
        stream = stream or sys.stderr
        self.console = Console(file=stream, highlight=False, soft_wrap=True)
        self.live_mode = self.console.is_terminal if live is None else live
        self._live: Live | None = None
        self._started = False

    def start(self, note: str | None = None) -> None:
        """Start showing progress, then print ``note`` (what this phase runs: the seed
        repeats after the search); a later call only prints its note."""
        if not self._started:
            self._started = True
            if self.live_mode:
                self._live = Live(self._line(), console=self.console, refresh_per_second=4,
                                  transient=False)
                self._live.start()
            else:
                self.console.print(f"study {self.study}: {self.total} trials, "
                                   f"{self.done} already finished")
        if note:
            self.console.print(note)

    def stop(self) -> None:
        if self._live is not None:
            self._live.update(self._line())
            self._live.stop()
            self._live = None
        else:
            self.console.print(self._line())

    def warn(self, message: str) -> None:
        """Show a warning (above the live line on a terminal)."""
        self.console.print(f"warning: {message}", markup=False)

    def trial_started(self, number: int) -> None:
        self.running.add(number)
        self._refresh()

    def trial_result(self, number: int, value: float | None) -> None:
        if improves(value, self.best, self.mode):
            self.best, self.best_number = value, number
        self._refresh()

    def trial_finished(self, number: int, state: str) -> None:
        self.running.discard(number)
        if state in FINISHED_TRIAL_STATES:
            self.done += 1
            if state in (TRIAL_FAILED, TRIAL_INFEASIBLE):
                self.failed += 1
        if self._live is None and state in FINISHED_TRIAL_STATES:
            tag = "" if state == TRIAL_COMPLETED else f" ({state})"
            self.console.print(f"  trial {number} finished{tag} · {self._counts()}")
        self._refresh()

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._line())

    def _counts(self) -> str:
        best = "-" if self.best is None else f"{self.best:.6g}"
        if self.best_number is not None:
            best += f" (trial {self.best_number})"
        return (f"{self.done}/{self.total} done · {len(self.running)} running · "
                f"{self.failed} failed · best {self.metric} ({self.mode}) {best}")

    def _line(self) -> Text:
        elapsed = time.monotonic() - self.started_at
        return Text(f"{self.study}: {self._counts()} · {elapsed:.0f}s")
