"""Running a study file in-process on the shared embedded Ray, as the driver tests do."""

from __future__ import annotations

import textwrap
from pathlib import Path

from searchsvc.driver import RunOptions, create_study, run_study
from searchsvc.searchers import create_searcher
from searchsvc.store import SqlStore, Store
from searchsvc.usecases import validate as validate_file


def run_file(path: Path, store: Store):
    """Validate ``path``, create its study in ``store`` and run it to its end (no live line)."""
    spec = validate_file(path)
    options = RunOptions(live_progress=False)
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    return run_study(spec.name, store, options, searcher=searcher)


def run_in(folder: Path, study: str, **modules: str):
    """Write each of ``modules`` (name: source) and the study file ``study`` into ``folder``,
    as a user's folder holds them, and run it with a SQLite store there; returns the run's
    outcome and the store."""
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
    path = folder / "study.yaml"
    path.write_text(study)
    store = SqlStore(f"sqlite:///{folder / 'db.sqlite'}")
    return run_file(path, store), store
