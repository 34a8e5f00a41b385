"""A study's record in the store as the driver keeps it: created (its objective checked, its
provenance and trial count recorded), its results folder, and the claim of the one process
that drives it."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from searchsvc import provenance
from searchsvc.backends import backend_class
from searchsvc.codebundle import CodeBundle, module_in_bundle
from searchsvc.core import StudyRecord, StudyState
from searchsvc.core.callables import CallableRef
from searchsvc.driver.warm_start import warm_start_trials
from searchsvc.errors import ConflictError, NotFoundError
from searchsvc.options import RunOptions
from searchsvc.searchers import Searcher
from searchsvc.searchers.repeats import planned_repeats, repeat_settings
from searchsvc.spec import StudySpec
from searchsvc.store import Store, searchsvc_home
from searchsvc.worker.objective import locate_objective, resolve_objective


def create_study(spec: StudySpec, store: Store, options: RunOptions, *, searcher: Searcher,
                 overwrite: bool = False, owner: str | None = None,
                 code: CodeBundle | None = None, import_objective: bool = True,
                 extra_provenance: Mapping[str, Any] | None = None,
                 search_paths: Sequence[str] | None = None) -> StudyRecord:
    """Record a new study (``overwrite`` deletes an existing one of the same name first;
    ``extra_provenance``: more to record, e.g. its place in a campaign;
    ``owner``: the service user it belongs to; ``code``: the uploaded code its objective comes
    from). The objective is imported to check it when ``import_objective`` (the CLI, which runs
    it next anyway); otherwise, and always for uploaded code, its module is only located: the
    service's API process never runs user code. ``searcher``: the study's (the use case made
    it from ``spec``, once): its trial count is recorded. ``search_paths``: where the
    objective is imported from, as the use case computed them (default:
    provenance.objective_paths of the study file, launched from here)."""
    in_bundle = code is not None and module_in_bundle(code.path,
                                                      CallableRef.parse(spec.objective).module)
    if not in_bundle:
        paths = (provenance.objective_paths(spec.source.file) if search_paths is None
                 else search_paths)
        if import_objective:
            resolve_objective(spec.objective, paths)
        else:
            locate_objective(spec.objective, paths)
    if spec.warm_start:
        warm_start_trials(spec, store, owner)  # refuse a missing study before creating this
    found = provenance.collect(spec.source.file, spec.seed)
    found.update(extra_provenance or {})
    if code is not None:
        found["code"] = code.provenance()
    if overwrite:
        with suppress(NotFoundError):  # nothing to replace is fine
            store.delete_study(spec.name)
    try:
        return store.create_study(
            name=spec.name, metric=spec.metric, mode=spec.mode, searcher=spec.searcher,
            spec_text=spec.source.text, spec_file=str(Path(spec.source.file).resolve())
            if not spec.source.file.startswith("<") else spec.source.file,
            total_trials=searcher.total_trials + planned_repeats(
                repeat_settings(spec, searcher, backend_class(spec.backend).runs_own_search),
                len(searcher.arms)),
            results_dir=str((options.results_root or searchsvc_home() / "results") / spec.name),
            provenance=found, owner=owner, constraints=spec.constraints,
        )
    except ConflictError:
        existing = store.get_study(spec.name)
        raise ConflictError(
            f"a study named {spec.name!r} already exists ({existing.state}, "
            f"{sum(existing.trial_counts.values())} trials). Continue it with `searchsvc resume "
            f"{spec.name}`, or replace it with `searchsvc run --overwrite`."
        ) from None


def results_dir_of(study: StudyRecord) -> Path:
    """The study's results folder (its report, Ray's files, local tracking stores)."""
    return Path(study.results_dir or searchsvc_home() / "results" / study.name)


def driver_info() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}


def claim(study: StudyRecord, store: Store) -> None:
    """Refuse to drive a study another live process is driving; a dead driver's claim lapses."""
    driver = study.driver or {}
    if study.state != StudyState.RUNNING or not driver:
        return
    if driver.get("host") == socket.gethostname() and driver.get("pid") != os.getpid():
        try:
            os.kill(int(driver["pid"]), 0)
        except (ProcessLookupError, ValueError, TypeError):
            return
        except PermissionError:
            pass
        raise ConflictError(f"study {study.name!r} is being run by process {driver['pid']} on "
                            f"this host; wait for it or stop it first")
    if driver.get("host") != socket.gethostname():
        raise ConflictError(f"study {study.name!r} is marked as running on host "
                            f"{driver.get('host')} (pid {driver.get('pid')}); resume it there")
