"""The allowance a study's driver gets on a shared cluster (searchsvc.allocation.allowance),
read before each trial starts and said on the study's progress whenever it changes."""

from __future__ import annotations

from searchsvc.allocation.allowance import Allowance, AllowanceReader, reader_from_environment
from searchsvc.driver.progress import Progress


class AllowanceGate:
    """How many trials the study may run at once now (None: no allowance given), and whether
    the trials above it are to pause at their next checkpoint (:attr:`preempt`)."""

    def __init__(self, reader: AllowanceReader, progress: Progress):
        self.reader, self.progress = reader, progress
        self._said: Allowance | None = None

    def __call__(self) -> int | None:
        got = self.reader()
        if got is None:
            return None
        if got != self._said:
            self._said = got
            self.progress.note(f"shared cluster: this study may run {got.trials} trial(s) at "
                               "once" + (f" ({got.why})" if got.why else "")
                               + ("; trials above it pause at their next checkpoint for a "
                                  "study of higher priority" if got.preempt else ""))
        return got.trials

    @property
    def preempt(self) -> bool:
        """Whether the allowance the last call read asks for trials above it to pause now."""
        return self._said is not None and self._said.preempt


def allowance_gate(progress: Progress) -> AllowanceGate | None:
    """The gate of the allowance file this driver was started with; None without one."""
    reader = reader_from_environment()
    return None if reader is None else AllowanceGate(reader, progress)
