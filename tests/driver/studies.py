"""Running a study file in-process on the shared embedded Ray, as the driver tests do."""

from __future__ import annotations

from pathlib import Path

from searchsvc.driver import RunOptions, create_study, run_study
from searchsvc.searchers import create_searcher
from searchsvc.store import Store
from searchsvc.usecases import validate as validate_file


def run_file(path: Path, store: Store):
    """Validate ``path``, create its study in ``store`` and run it to its end (no live line)."""
    spec = validate_file(path)
    options = RunOptions(live_progress=False)
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    return run_study(spec.name, store, options, searcher=searcher)
