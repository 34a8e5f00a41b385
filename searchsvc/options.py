"""How a study runs, as every front door passes it down: one set of options, read by the use
cases and the driver alike. Light by design: importing it imports no other part."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TextIO


@dataclass(frozen=True)
class RunOptions:
    """Where Ray is, where results go, how to show progress."""

    address: str | None = None  # None: start an embedded Ray; else auto | host:port
    results_root: Path | None = None  # default $SEARCHSVC_HOME/results
    num_cpus: int | None = None  # embedded Ray only
    num_gpus: int | None = None  # embedded Ray only (logical GPUs are fine for tests)
    verbose: bool = False  # show the objectives' own output
    progress_stream: TextIO | None = None
    live_progress: bool | None = None
