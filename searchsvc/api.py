"""The Python API, for notebooks and scripts: run a study and read its results as DataFrames.

    import searchsvc

    study = searchsvc.run("spaces/quickstart.yaml", storage="sqlite:///studies.db")
    study.trials_dataframe()        # one row per trial, configs flattened (= trials.csv)
    study.best_trials               # best first
    study.measurements()            # every reported step, long format
    study.report()                  # the findings, typed (the data of report.json)
    print(study.next_study())       # the suggested next study file

It calls the same use cases as the CLI (:mod:`searchsvc.usecases`), so a study run here is
stored, resumable and reported exactly as ``searchsvc run`` would.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.spec import StudySpec, spec_of
from searchsvc.store import Store, open_store

if TYPE_CHECKING:
    import pandas as pd

    from searchsvc.analysis import StudyAnalysis

StudySource = str | Path | Mapping[str, Any] | StudySpec


class Study:
    """A stored study, read through its store: trials, measurements, findings.

    Reads are live: each call asks the store again, so a study still running shows its
    latest trials."""

    def __init__(self, name: str, store: Store):
        self.name, self.store = name, store

    @property
    def record(self) -> StudyRecord:
        """The study's state, counts and best value, as stored now."""
        return self.store.get_study(self.name)

    @cached_property
    def spec(self) -> StudySpec:
        return spec_of(self.record)

    @property
    def trials(self) -> list[TrialRecord]:
        """Every trial by number (without measurements: see :meth:`measurements`)."""
        return self.store.get_trials(self.name)

    @property
    def best_trials(self) -> list[TrialRecord]:
        """The search's completed and pruned trials with a finite value, best first (ties by
        number): the ranking of the report's best trials (seed repeats are in
        :meth:`trials` and the report's ``noise``)."""
        from searchsvc.analysis.trials import ranked, search_trials

        return ranked(search_trials(self.trials), self.record.mode)

    def trials_dataframe(self) -> pd.DataFrame:
        """One row per trial, its config flattened into columns: the table of trials.csv."""
        import pandas as pd

        from searchsvc.report.tables import trial_table

        header, rows = trial_table(self.trials)
        frame = pd.DataFrame(rows, columns=header)
        # Missing values as NaN (as read_csv gives them), with each column's own dtype.
        return frame.astype(object).where(frame.notna(), float("nan")).infer_objects()

    def measurements(self) -> pd.DataFrame:
        """Every metric of every reported step: columns number, attempt, step, metric, value."""
        import pandas as pd

        rows = [(t.number, m.attempt, m.step, name, value)
                for t in self.store.get_trials(self.name, measurements=True)
                for m in t.measurements for name, value in m.metrics.items()]
        return pd.DataFrame(rows, columns=["number", "attempt", "step", "metric", "value"])

    def report(self, *, top_fraction: float = 0.2) -> StudyAnalysis:
        """The findings (boundary checks, isolation, curves, importance, next study) as typed
        objects: the data report.json holds. Writes nothing; :meth:`write_report` does."""
        from searchsvc.report.writer import analyze_stored

        return analyze_stored(self.store, self.record, self.spec, top_fraction)[1]

    def write_report(self, out_dir: str | Path | None = None) -> Path:
        """Write the report files (as ``searchsvc report``); the main file's path."""
        from searchsvc import usecases

        return usecases.report(self.name, self.store, out_dir, spec=self.spec).main

    def next_study(self) -> str:
        """The suggested next study file (YAML), as next_study.yaml."""
        return self.report().next_study.text

    def __repr__(self) -> str:
        record = self.record
        return (f"<Study {self.name!r} {record.state}: {sum(record.trial_counts.values())} "
                f"trials, best {record.metric}={record.best_value}>")


def run(study: StudySource, *, storage: str | None = None, address: str | None = None,
        results: str | Path | None = None, overwrite: bool = False,
        num_cpus: int | None = None, verbose: bool = False) -> Study:
    """Validate and run a study (a study file's path, its content as a dict, or a spec) on Ray,
    store it and write its report, as ``searchsvc run`` does; the finished :class:`Study`.
    :class:`~searchsvc.errors.SpecError` lists every problem of a bad study file."""
    from searchsvc import usecases
    from searchsvc.driver import RunOptions

    spec = _spec(study)
    store = open_store(storage)
    options = RunOptions(address=address, results_root=Path(results) if results else None,
                         num_cpus=num_cpus, verbose=verbose)
    usecases.run(spec, store, options, overwrite=overwrite)
    return Study(spec.name, store)


def load(name: str, *, storage: str | None = None) -> Study:
    """The stored study ``name``; :class:`~searchsvc.errors.NotFoundError` if there is none."""
    store = open_store(storage)
    store.get_study(name)
    return Study(name, store)


def _spec(study: StudySource) -> StudySpec:
    from searchsvc import usecases

    if isinstance(study, StudySpec):
        return usecases.validate_text(study.source.text, study.source.file)
    if isinstance(study, Mapping):
        return usecases.validate_text(yaml.safe_dump(dict(study), sort_keys=False),
                                      "<dict>")
    return usecases.validate(study)
