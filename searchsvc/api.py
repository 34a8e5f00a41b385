"""The Python API, for notebooks and scripts: run a study and read its results as DataFrames.

    import searchsvc

    study = searchsvc.run("spaces/quickstart.yaml", storage="sqlite:///studies.db")
    study.trials_dataframe()        # one row per trial, configs flattened (= trials.csv)
    study.best_trials               # best first
    study.measurements()            # every reported step, long format
    study.report()                  # the findings, typed (the data of report.json)
    print(study.next_study())       # the suggested next study file

    remote = searchsvc.load("quickstart", server="http://host:8000", token="...")  # the same

It calls the same use cases as the CLI (:mod:`searchsvc.usecases`), so a study run here is
stored, resumable and reported exactly as ``searchsvc run`` would. A study on a searchsvc
server is read through its REST API (:class:`searchsvc.client.RemoteStudies`, which reads as a
store does) by the same code as a local one, so both give the same tables and findings.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from searchsvc.core import StudyRecord, StudyState, TrialRecord
from searchsvc.errors import SearchsvcError
from searchsvc.spec import StudySpec, spec_of
from searchsvc.store import StudyReader, open_store

if TYPE_CHECKING:
    import pandas as pd

    from searchsvc.client import ServiceClient
    from searchsvc.usecases import Campaign, Comparison, StudyAnalysis

StudySource = str | Path | Mapping[str, Any] | StudySpec


class Study:
    """A stored study: trials, measurements, findings. ``reader``: its store, or the studies
    of a searchsvc server (:class:`searchsvc.client.RemoteStudies`); every method reads
    through it, so a local and a remote study give the same tables and findings.

    Reads are live: each call asks the store (or server) again, so a study still running
    shows its latest trials."""

    def __init__(self, name: str, reader: StudyReader):
        self.name, self.reader = name, reader

    @property
    def record(self) -> StudyRecord:
        """The study's state, counts and best value, as stored now."""
        return self.reader.get_study(self.name)

    @cached_property
    def spec(self) -> StudySpec:
        return spec_of(self.record)

    @property
    def trials(self) -> list[TrialRecord]:
        """Every trial by number (without measurements: see :meth:`measurements`)."""
        return self.reader.get_trials(self.name)

    @property
    def best_trials(self) -> list[TrialRecord]:
        """The study's best candidates, best first (ties by number): search trials that
        completed or were pruned and meet every constraint (:mod:`searchsvc.core.judging`),
        the ranking of the report's best trials; the first is the study's best. Seed repeats
        are in :meth:`trials` and the report's ``noise``."""
        from searchsvc.core.judging import ranked

        record = self.record
        return ranked(self.trials, record.mode, record.constraints)

    def trials_dataframe(self) -> pd.DataFrame:
        """One row per trial, its config flattened into columns: the table of trials.csv."""
        import pandas as pd

        from searchsvc import usecases

        header, rows = usecases.trial_table(self.name, self.reader)
        frame = pd.DataFrame(rows, columns=header)
        # Missing values as NaN (as read_csv gives them), with each column's own dtype.
        return frame.astype(object).where(frame.notna(), float("nan")).infer_objects()

    def measurements(self) -> pd.DataFrame:
        """Every metric of every reported step: columns number, attempt, step, metric, value."""
        import pandas as pd

        rows = [(t.number, m.attempt, m.step, name, value)
                for t in self.reader.get_trials(self.name, measurements=True)
                for m in t.measurements for name, value in m.metrics.items()]
        return pd.DataFrame(rows, columns=["number", "attempt", "step", "metric", "value"])

    def report(self, *, top_fraction: float = 0.2) -> StudyAnalysis:
        """The findings (boundary checks, isolation, curves, importance, next study) as typed
        objects: the data report.json holds. Writes nothing; :meth:`write_report` does."""
        from searchsvc import usecases

        return usecases.findings(self.reader, self.record, self.spec, top_fraction)[1]

    def write_report(self, out_dir: str | Path | None = None) -> Path:
        """Write the report files (as ``searchsvc report``; a remote study's here, from what
        the server sends, by default into ``$SEARCHSVC_HOME/results/NAME``); the main file's
        path."""
        from searchsvc import usecases

        return usecases.report(self.name, self.reader, out_dir, spec=self.spec).main

    def figures(self) -> dict[str, list[Any]]:
        """The report's interactive figures (Plotly), by section: ``isolation`` (each
        scientific parameter's effect with the nuisance ones tuned, seed noise shaded),
        ``axes`` (each searched parameter's values against the metric: the boundary checks),
        ``curves``, ``importance``, ``scheduler`` and, with several objectives, ``pareto``;
        a notebook shows each one inline."""
        from searchsvc import usecases

        return usecases.figures(self.reader, self.record, self.spec)

    def compare(self, baseline: Study | str) -> Comparison:
        """Whether this study's best beats ``baseline``'s (a study in the same store, or its
        name) beyond both studies' seed noise, as ``searchsvc compare`` says."""
        from searchsvc import usecases

        name = baseline.name if isinstance(baseline, Study) else baseline
        return usecases.compare(name, self.name, self.reader)

    def next_study(self) -> str:
        """The suggested next study file (YAML), as next_study.yaml."""
        return self.report().next_study.text

    def campaign(self) -> Campaign:
        """The campaign this study is a round of (``searchsvc next`` makes rounds), as
        ``searchsvc campaign`` shows it: every round's space, best with its noise, verdicts,
        decisions with their evidence and compute. A study in no campaign is the one round of
        its own. A study on a server: the server's timeline (``GET /campaigns/{name}``)."""
        from searchsvc import usecases
        from searchsvc.client import RemoteStudies
        from searchsvc.errors import UsageError
        from searchsvc.store import Store

        name = usecases.campaign_name(self.record)
        if isinstance(self.reader, RemoteStudies):
            return self.reader.get_campaign(name)
        if not isinstance(self.reader, Store):
            raise UsageError("campaign() needs a store or a server to read studies from")
        return usecases.campaign(name, self.reader, owner=self.record.owner)

    def wait(self, *, every: float = 2.0, timeout: float | None = None) -> StudyRecord:
        """Wait until the study is no longer created or running (a study submitted to a
        server, or run by another process); its record then. :class:`TimeoutError` after
        ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (record := self.record).state in (StudyState.CREATED, StudyState.RUNNING):
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"study {self.name!r} is still {record.state} after "
                                   f"{timeout:g} s")
            time.sleep(every)
        return record

    def __repr__(self) -> str:
        record = self.record
        return (f"<Study {self.name!r} {record.state}: {record.counts.describe()}, "
                f"best {record.metric}={record.best_value}>")


def run(study: StudySource, *, objective: Callable[..., Any] | None = None,
        storage: str | None = None, address: str | None = None,
        results: str | Path | None = None, overwrite: bool = False,
        num_cpus: int | None = None, verbose: bool = False, server: str | None = None,
        token: str | None = None, code: str | Path | Literal[False] | None = None,
        wait: bool = True, preflight: bool = True) -> Study:
    """Validate and run a study (a study file's path, its content as a dict, or a spec) on Ray,
    store it and write its report, as ``searchsvc run`` does; the finished :class:`Study`.
    :class:`~searchsvc.errors.SpecError` lists every problem of a bad study file.

    ``objective``: the objective as a function (one defined in a notebook or script: Ray ships
    it to the workers by value), instead of the study's ``objective: module:function``. A dict
    may then leave ``objective`` out; a file or spec must name the function as
    ``module:qualname`` (``__main__:train`` in a notebook). A study run so is resumed or rerun
    from Python with the same function.

    With ``server`` (a searchsvc server's URL; ``token`` defaults to ``$SEARCHSVC_TOKEN``) the
    study is submitted there instead, as ``searchsvc submit`` does: ``code`` is a folder of
    code to upload for the objective to import (default: the study file's folder when the
    objective's module is there, none for a dict; ``False``: none). The remote :class:`Study`
    is returned once the study has finished, or at once with ``wait=False``.

    ``preflight``: first run the objective at the centre of the space for a few steps, check
    it and estimate the study's cost, as ``searchsvc run`` does (a server preflights a
    submitted study itself before its first trial; ``False`` asks it not to)."""
    from searchsvc import usecases

    if objective is not None:
        study = _giving(study, objective)
    spec = _spec(study)
    if server is not None:
        local = {"storage": storage, "address": address, "results": results,
                 "num_cpus": num_cpus, "overwrite": overwrite or None,
                 "verbose": verbose or None}
        given = [name for name, value in local.items() if value is not None]
        if given:
            raise SearchsvcError(f"{', '.join(given)}: options of a local run; a server "
                                 "runs a submitted study with its own")
        return _submit(spec, _client(server, token), code, wait, preflight)
    store = open_store(storage)
    options = usecases.RunOptions(address=address,
                                  results_root=Path(results) if results else None,
                                  num_cpus=num_cpus, verbose=verbose)
    usecases.run(spec, store, options, overwrite=overwrite, preflight=preflight)
    return Study(spec.name, store)


def load(name: str, *, storage: str | None = None, server: str | None = None,
         token: str | None = None) -> Study:
    """The stored study ``name``; :class:`~searchsvc.errors.NotFoundError` if there is none.

    With ``server`` (a searchsvc server's URL) the study is read from there, with ``token``
    (as the command line's ``--server`` and ``--token``, they default to ``$SEARCHSVC_SERVER``
    when no ``storage`` is given, and to ``$SEARCHSVC_TOKEN``). Only the token's user's
    studies are found there: another user's is :class:`~searchsvc.errors.NotFoundError` too,
    and a bad token :class:`~searchsvc.errors.ServiceError`."""
    if server is not None and storage is not None:
        raise SearchsvcError("a study is read from a store or from a server: give storage or "
                             "server, not both")
    if server is None and storage is None:
        server = os.environ.get("SEARCHSVC_SERVER") or None
    reader: StudyReader
    if server is not None:
        from searchsvc.client import RemoteStudies

        reader = RemoteStudies(_client(server, token))
    else:
        reader = open_store(storage)
    reader.get_study(name)
    return Study(name, reader)


def _client(server: str, token: str | None) -> ServiceClient:
    from searchsvc.client import ServiceClient

    return ServiceClient(server, token if token is not None
                         else os.environ.get("SEARCHSVC_TOKEN"))


def _submit(spec: StudySpec, client: ServiceClient, code: str | Path | Literal[False] | None,
            wait: bool, preflight: bool) -> Study:
    """Submit ``spec`` (uploading ``code``, see :func:`run`) to ``client``'s server."""
    from searchsvc.client import RemoteStudies, submit_study

    given = Path(spec.source.file)
    submit_study(client, spec.source.text, spec.objective,
                 given.parent if given.is_file() else None,
                 Path(code) if isinstance(code, str) else code, preflight)
    study = Study(spec.name, RemoteStudies(client))
    if wait:
        study.wait()
    return study


def _giving(study: StudySource, function: Callable[..., Any]) -> StudySource:
    """``study`` naming ``function`` as its objective, which this process (and every worker it
    ships the function to) resolves to it."""
    from searchsvc.usecases import give_objective, objective_ref

    ref = objective_ref(function)
    if isinstance(study, Mapping):
        named = study.get("objective", ref)
        if named != ref:
            raise SearchsvcError(f"objective: the study names {named!r} but objective= is "
                                 f"{ref!r}: leave the study's objective out, or name it {ref!r}")
        study = {**dict(study), "objective": ref}
    else:
        named = (study if isinstance(study, StudySpec) else _spec(study)).objective
        if named != ref:
            raise SearchsvcError(f"objective: the study file names {named!r} but objective= is "
                                 f"{ref!r}: name it {ref!r} in the study file")
    give_objective(ref, function)
    return study


def _spec(study: StudySource) -> StudySpec:
    from searchsvc import usecases

    if isinstance(study, StudySpec):  # parsed already, and immutable: only checked
        return usecases.check(study)
    if isinstance(study, Mapping):
        return usecases.validate_text(yaml.safe_dump(dict(study), sort_keys=False),
                                      "<dict>")
    return usecases.validate(study)
