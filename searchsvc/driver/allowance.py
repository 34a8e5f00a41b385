"""The allowance a study's driver gets on a shared cluster (searchsvc.allocation.allowance),
read before each trial starts and said on the study's progress whenever it changes."""

from __future__ import annotations

from searchsvc.allocation.allowance import AllowanceReader, reader_from_environment
from searchsvc.driver.progress import Progress


class AllowanceGate:
    """How many trials the study may run at once now (None: no allowance given)."""

    def __init__(self, reader: AllowanceReader, progress: Progress):
        self.reader, self.progress = reader, progress
        self._said: tuple[int, str] | None = None

    def __call__(self) -> int | None:
        got = self.reader()
        if got is None:
            return None
        if got != self._said:
            self._said = got
            trials, why = got
            self.progress.note(f"shared cluster: this study may run {trials} trial(s) at once"
                               + (f" ({why})" if why else ""))
        return got[0]


def allowance_gate(progress: Progress) -> AllowanceGate | None:
    """The gate of the allowance file this driver was started with; None without one."""
    reader = reader_from_environment()
    return None if reader is None else AllowanceGate(reader, progress)
