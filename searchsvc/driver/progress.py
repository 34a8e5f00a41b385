"""Live progress of a running study: trials done/total, running, failed, best so far.

On a terminal it is one live line (rich); in a Jupyter notebook a progress bar (tqdm's, a
widget where ipywidgets is installed) with the same counts; in logs and CI it prints a line per
finished trial.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

from searchsvc.core import FINISHED_TRIAL_STATES, Constraint, TrialState, improves
from searchsvc.core.durations import format_duration
from searchsvc.core.judging import (
    Candidate,
    Judged,
    StudyCounts,
    best_after,
    best_trial,
    count_line,
    study_counts,
)


class Progress:
    """Counts trials as the runner reports them and shows the study's state. The counts and the
    best so far follow :mod:`searchsvc.core.judging`, as every other surface: ``history`` is the
    study's stored trials (a resumed study), ``constraints`` its bounds; a value counts towards
    the best once its trial ended completed or pruned, meeting them, and not as a seed repeat.
    ``total``: the search's trials; ``repeats``: the seed repeats planned after it, counted
    apart (core.judging.count_line, as the closing summary counts them)."""

    def __init__(self, study: str, total: int, metric: str, mode: str, *,
                 repeats: int = 0, history: Iterable[Judged] = (),
                 constraints: Sequence[Constraint] = (), finished_before: int = 0,
                 stream: TextIO | None = None, live: bool | None = None):
        self.study, self.total, self.metric, self.mode = study, total, metric, mode
        self.repeats = repeats
        self.constraints = tuple(constraints)
        self.finished_before = finished_before  # ended trials not in ``history``
        self.ended: dict[int, Judged] = {t.number: t for t in history
                                         if t.state in FINISHED_TRIAL_STATES}
        self.values: dict[int, float] = {}  # running trials: their best value so far
        self._judge()
        self.running: set[int] = set()
        self.started_at = time.monotonic()
        self.console = Console(file=stream or sys.stderr, highlight=False, soft_wrap=True)
        self.live_mode = self.console.is_terminal if live is None else live
        self._live: Live | None = None
        self._bar: Any = None  # tqdm's bar, in a notebook
        # In a notebook's kernel, unless told where and how to show progress.
        self.notebook = live is None and stream is None and self.console.is_jupyter
        self._started = False
        self.store_down: float | None = None  # seconds the store has been unreachable

    def _judge(self) -> None:
        # Only an ended trial changes the counts or the best: judged then, not on every refresh.
        self._counts_now = study_counts(self.ended.values())
        self._best_now = best_trial(self.ended.values(), self.mode, self.constraints)

    @property
    def counts(self) -> StudyCounts:
        return self._counts_now

    @property
    def done(self) -> int:
        """Every trial that ended for good, seed repeats included (the notebook bar's)."""
        return self.finished_before + self.counts.ended

    @property
    def failed(self) -> int:
        return self.counts.failed

    @property
    def best_trial(self) -> Judged | None:
        return self._best_now

    @property
    def best(self) -> float | None:
        found = self.best_trial
        return None if found is None else found.best_value

    def start(self, note: str | None = None) -> None:
        """Start showing progress, then print ``note`` (what this phase runs: the seed
        repeats after the search); a later call only prints its note."""
        if not self._started:
            self._started = True
            if self.notebook:
                self._bar = notebook_bar(self.study, self.total + self.repeats, self.done)
            elif self.live_mode:
                self._live = Live(self._line(), console=self.console, refresh_per_second=4,
                                  transient=False)
                self._live.start()
            else:
                repeats = f" and {self.repeats} seed repeats" if self.repeats else ""
                self.console.print(f"study {self.study}: {self.total} trials{repeats}, "
                                   f"{self.done} already finished")
        if note:
            self.console.print(note)

    def stop(self) -> None:
        if self._bar is not None:
            self._refresh()
            self._bar.close()
            self._bar = None
            return
        if self._live is not None:
            self._live.update(self._line())
            self._live.stop()
            self._live = None
        else:
            self.console.print(self._line())

    def note(self, message: str) -> None:
        """Say what the run is doing between trials (above the live line on a terminal)."""
        self.console.print(message, markup=False)

    def warn(self, message: str) -> None:
        """Show a warning (above the live line on a terminal)."""
        self.console.print(f"warning: {message}", markup=False)

    def store_outage(self, seconds: float, *, ended: bool, window_s: float, error: str
                     ) -> None:
        """The store has been unreachable for ``seconds`` (``ended``: it is back): the line
        says so while it lasts; without a live line, its start and end are printed."""
        if ended:
            self.store_down = None
            if self._live is None:
                self.console.print(f"store back after {format_duration(seconds)}: results written",
                                   markup=False)
        else:
            if self.store_down is None and self._live is None:
                self.console.print(f"warning: store unreachable ({error}); retrying for up to "
                                   f"{window_s:g} s, trials go on", markup=False)
            self.store_down = seconds
        self._refresh()

    def trial_started(self, number: int) -> None:
        self.running.add(number)
        self._refresh()

    def trial_result(self, number: int, value: float | None) -> None:
        if improves(value, self.values.get(number), self.mode):
            self.values[number] = float(value)  # type: ignore[arg-type]
        self._refresh()

    def trial_finished(self, number: int, state: str, *, repeat_of: int | None = None,
                       final_metrics: Mapping[str, float] | None = None) -> None:
        """Trial ``number`` ended in ``state`` (``repeat_of``: it was a seed repeat;
        ``final_metrics``: what its constraints are judged on)."""
        self.running.discard(number)
        value = self.values.pop(number, None)
        finished = state in FINISHED_TRIAL_STATES
        if finished:
            ended = Candidate(number, state, value, repeat_of, dict(final_metrics or {}))
            again = number in self.ended
            self.ended[number] = ended
            if again:  # not one more trial: judged afresh
                self._judge()
            else:  # one more: the counts and best move on by it alone
                self._counts_now = self._counts_now.plus(ended)
                self._best_now = best_after(self._best_now, ended, self.mode, self.constraints)
        if self._live is None and self._bar is None and finished:
            tag = "" if state == TrialState.COMPLETED else f" ({state})"
            self.console.print(f"  trial {number} finished{tag} · {self._counts()}")
        self._refresh()

    def _refresh(self) -> None:
        if self._bar is not None:
            self._bar.n = self.done
            self._bar.set_postfix_str(self._counts().split(" · ", 1)[1], refresh=True)
        if self._live is not None:
            self._live.update(self._line())

    def _counts(self) -> str:
        found = self.best_trial
        best = "-" if found is None else f"{found.best_value:.6g} (trial {found.number})"
        counts = self.counts
        done = count_line(self.finished_before + counts.finished, self.total,
                          counts.repeats_finished, self.repeats)
        return (f"{done} · {len(self.running)} running · "
                f"{self.failed} failed · best {self.metric} ({self.mode}) {best}")

    def _line(self) -> Text:
        elapsed = format_duration(time.monotonic() - self.started_at)
        down = ("" if self.store_down is None
                else f" · store unreachable, retrying ({format_duration(self.store_down)})")
        return Text(f"{self.study}: {self._counts()} · {elapsed}{down}")


def notebook_bar(study: str, total: int, done: int) -> Any:
    """A progress bar for a notebook's output: tqdm's widget with ipywidgets, else its text
    bar (tqdm.auto chooses)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=done, desc=study, unit="trial", dynamic_ncols=True)
