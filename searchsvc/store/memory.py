"""The study store in this process's memory: nothing written to disk, gone with the process.

For tests, notebooks and benchmarks that measure something other than a database. It behaves as
:class:`~searchsvc.store.sql.SqlStore` does, call for call (``searchsvc.testing.store_contract``
runs the same suite over both): values go through the same JSON encoding, so what a caller
reads back is what SQL would give back, and never shares state with what it passed in.
"""

from __future__ import annotations

import itertools
import math
import secrets
import threading
import time
from collections.abc import (
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from searchsvc.core import (
    FINISHED_TRIAL_STATES,
    Constraint,
    EventKind,
    Measurement,
    StudyRecord,
    StudyState,
    TokenGrant,
    TrialEvent,
    TrialRecord,
    TrialState,
    improves,
)
from searchsvc.core.judging import Candidate, best_value, study_counts
from searchsvc.errors import ConflictError, NotFoundError
from searchsvc.store import jsonutil
from searchsvc.store.base import (
    UPDATABLE_STUDY_FIELDS,
    MeasurementRow,
    Store,
    best_point,
    check_max_priority,
    checked_quota,
    constraints_json,
    constraints_of,
    token_hash,
)

_GONE = object()  # marks "no entry" in the undo log


# Rows are immutable and replaced whole on every change, so undoing a change is putting the old
# row back under its key.
@dataclass(frozen=True)
class _Study:
    id: int
    name: str
    state: str
    metric: str
    mode: str
    searcher: str
    spec_text: str
    spec_file: str
    total_trials: int | None
    results_dir: str | None
    created_at: float
    provenance: str  # JSON, as the SQL store keeps it
    driver: str
    owner: str | None
    started_at: float | None = None
    finished_at: float | None = None
    constraints: str | None = None  # JSON, as the SQL store keeps them


@dataclass(frozen=True)
class _Trial:
    id: int
    study_id: int
    number: int
    state: str
    config: str  # JSON
    arm: str  # JSON
    seed: int
    attempts: int
    started_at: float | None
    node: str | None
    error: str | None = None
    finished_at: float | None = None
    best_value: float | None = None
    best_step: int | None = None
    last_step: int | None = None
    checkpoints: str = "[]"  # JSON
    repeat_of: int | None = None
    final_metrics: str | None = None  # JSON


@dataclass(frozen=True)
class _Measurement:
    attempt: int
    step: int
    value: float | None
    metrics: str  # JSON
    recorded_at: float
    telemetry: str | None = None  # JSON
    dimensionality: str | None = None  # JSON


@dataclass(frozen=True)
class _Event:
    id: int
    study_id: int
    number: int
    kind: str
    step: int | None
    data: str  # JSON
    recorded_at: float


class InMemoryStore(Store):
    """The store in plain Python objects behind one lock; safe to share between threads.

    A :meth:`transaction` block holds the lock from start to end (other threads' calls wait,
    as writers wait for a SQLite write transaction) and keeps an undo log of what it changed,
    replayed backwards if the block raises.
    """

    def __init__(self, url: str = "memory:") -> None:  # the URL names no place: all in memory
        self.url = "memory:"
        self._lock = threading.RLock()
        self._undo: list[Callable[[], None]] | None = None  # set inside a transaction block
        self._ids = itertools.count(1)  # one sequence for every table: ids are never reused
        self._studies: dict[int, _Study] = {}
        self._study_ids: dict[str, int] = {}
        self._trials: dict[int, _Trial] = {}
        self._trial_ids: dict[tuple[int, int], int] = {}  # (study id, number) -> trial id
        self._measurements: dict[int, list[_Measurement]] = {}  # trial id -> in insert order
        self._events: dict[int, _Event] = {}
        self._tokens: dict[str, TokenGrant] = {}  # token hash -> grant
        self._quotas: dict[str, dict[str, float]] = {}

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Make the store calls this thread makes inside the block one transaction: all of them
        take effect, or (when the block raises) none."""
        with self._lock:
            if self._undo is not None:  # nested: part of the outer block
                yield
                return
            self._undo = []
            try:
                yield
            except BaseException:
                for undo in reversed(self._undo):
                    undo()
                raise
            finally:
                self._undo = None

    # -- changes, each undoable ----------------------------------------------------------------

    def _put(self, table: MutableMapping[Any, Any], key: Any, value: Any) -> None:
        """``table[key] = value`` (``_GONE``: delete the entry), undone on rollback."""
        if self._undo is not None:
            old = table.get(key, _GONE)
            self._undo.append(lambda: _restore(table, key, old))
        if value is _GONE:
            del table[key]
        else:
            table[key] = value

    def _append(self, trial_id: int, rows: list[_Measurement]) -> None:
        kept = self._measurements[trial_id]
        if self._undo is not None:
            length = len(kept)
            self._undo.append(lambda: kept.__delitem__(slice(length, None)))
        kept.extend(rows)

    # -- studies -------------------------------------------------------------------------------

    def create_study(self, *, name: str, metric: str, mode: str, searcher: str, spec_text: str,
                     spec_file: str, total_trials: int | None, results_dir: str | None,
                     provenance: Mapping[str, Any], owner: str | None = None,
                     constraints: Sequence[Constraint] = ()) -> StudyRecord:
        """Create a study (``owner``: the service user it belongs to); :class:`ConflictError`
        if the name is taken."""
        with self._lock:
            if name in self._study_ids:
                raise ConflictError(f"a study named {name!r} already exists")
            row = _Study(id=next(self._ids), name=name, state=str(StudyState.CREATED),
                         metric=metric, mode=mode, searcher=searcher, spec_text=spec_text,
                         spec_file=spec_file, total_trials=total_trials, results_dir=results_dir,
                         created_at=time.time(), provenance=jsonutil.dumps(dict(provenance)),
                         driver="{}", owner=owner,
                         constraints=constraints_json(constraints))
            self._put(self._studies, row.id, row)
            self._put(self._study_ids, name, row.id)
            return self._study_record(row)

    def get_study(self, name: str) -> StudyRecord:
        with self._lock:
            return self._study_record(self._study_row(name))

    def list_studies(self, owner: str | None = None,
                     states: Collection[str] | None = None) -> list[StudyRecord]:
        """Every study, oldest first; only ``owner``'s when given, only those in ``states``
        when given."""
        with self._lock:
            wanted = None if states is None else {str(s) for s in states}
            rows = [r for r in self._studies.values()
                    if (owner is None or r.owner == owner)
                    and (wanted is None or r.state in wanted)]
            # Python's sort is stable: studies created in the same clock tick stay in id order.
            return [self._study_record(r) for r in sorted(rows, key=lambda r: r.created_at)]

    def update_study(self, name: str, **fields: Any) -> StudyRecord:
        """Set study fields: state, total_trials, results_dir, started_at, finished_at,
        driver (mapping), provenance (mapping)."""
        unknown = set(fields) - UPDATABLE_STUDY_FIELDS
        if unknown:
            raise ValueError(f"cannot update study fields {sorted(unknown)}")
        changes: dict[str, Any] = {
            key: jsonutil.dumps(dict(value)) if key in ("driver", "provenance") else value
            for key, value in fields.items()}
        if "state" in changes:  # ValueError for an unknown state, as SqlStore gives
            changes["state"] = str(StudyState(changes["state"]))
        with self._lock:
            row = replace(self._study_row(name), **changes)
            record = self._study_record(row)
            self._put(self._studies, row.id, row)
            return record

    def delete_study(self, name: str) -> None:
        with self._lock:
            row = self._study_row(name)
            for trial in [t for t in self._trials.values() if t.study_id == row.id]:
                self._put(self._measurements, trial.id, _GONE)
                self._put(self._trial_ids, (row.id, trial.number), _GONE)
                self._put(self._trials, trial.id, _GONE)
            for event in [e for e in self._events.values() if e.study_id == row.id]:
                self._put(self._events, event.id, _GONE)
            self._put(self._study_ids, name, _GONE)
            self._put(self._studies, row.id, _GONE)

    # -- API tokens ----------------------------------------------------------------------------

    def create_token(self, user: str, *, allow_code: bool = False,
                     max_priority: int = 0) -> str:
        """A new API token for ``user`` (``allow_code``: it may upload code bundles;
        ``max_priority``: the highest priority its studies may ask for); only its hash is
        kept, so this is the one chance to read it."""
        check_max_priority(max_priority)
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._put(self._tokens, token_hash(token),
                      TokenGrant(user, bool(allow_code), max_priority))
        return token

    def grant_for_token(self, token: str) -> TokenGrant | None:
        """Who ``token`` acts as and what it may do, or None for an unknown token."""
        with self._lock:
            return self._tokens.get(token_hash(token))

    def set_quota(self, user: str, limits: Mapping[str, float]) -> None:
        limits = checked_quota(limits)
        with self._lock:
            if limits or user in self._quotas:
                self._put(self._quotas, user, limits or _GONE)

    def get_quotas(self) -> dict[str, dict[str, float]]:
        with self._lock:
            return {user: dict(limits) for user, limits in self._quotas.items()}

    # -- trials --------------------------------------------------------------------------------

    def start_trial(self, study_id: int, *, number: int, config: Mapping[str, Any],
                    arm: Mapping[str, Any], seed: int, node: str | None = None,
                    repeat_of: int | None = None) -> TrialRecord:
        """Mark trial ``number`` running: a new trial, or a new attempt of an unfinished one.
        :class:`ConflictError` if that trial already finished (it must never run twice)."""
        now = time.time()
        with self._lock:
            if study_id not in self._studies:
                raise NotFoundError(f"no study with id {study_id}")
            trial_id = self._trial_ids.get((study_id, number))
            if trial_id is None:
                row = _Trial(id=next(self._ids), study_id=study_id, number=number,
                             state=str(TrialState.RUNNING), config=jsonutil.dumps(dict(config)),
                             arm=jsonutil.dumps(dict(arm)), seed=seed, attempts=1,
                             started_at=now, node=node, repeat_of=repeat_of)
                self._put(self._trial_ids, (study_id, number), row.id)
                self._put(self._measurements, row.id, [])
            else:
                row = self._trials[trial_id]
                if row.state in FINISHED_TRIAL_STATES:
                    raise ConflictError(f"trial {number} of study {study_id} already finished "
                                        f"({row.state}); it is never run twice")
                # The arm and seed stay those of the first attempt, as in SqlStore.
                row = replace(row, attempts=row.attempts + 1, state=str(TrialState.RUNNING),
                              config=jsonutil.dumps(dict(config)), started_at=now,
                              finished_at=None, error=None, best_value=None, best_step=None,
                              last_step=None, node=node, final_metrics=None)
            self._put(self._trials, row.id, row)
            return _trial_record(row, ())

    def record_measurements(self, trial_id: int, attempt: int, mode: str,
                            items: Iterable[MeasurementRow]) -> None:
        """Append (step, value, metrics) rows of one attempt and update the trial's best and
        last step. A non-finite value is kept in ``metrics`` and never becomes the best."""
        now = time.time()
        rows: list[_Measurement] = []
        for step, value, metrics, *extra in items:
            kept = float(value) if value is not None and math.isfinite(value) else None
            rows.append(_Measurement(attempt, step, kept, jsonutil.dumps(dict(metrics)), now,
                                     jsonutil.optional(extra, 0), jsonutil.optional(extra, 1)))
        if not rows:
            return
        last = max(m.step for m in rows)
        found = best_point(((m.step, m.value) for m in rows), mode)
        with self._lock:
            row = self._trials.get(trial_id)
            if row is None:
                raise NotFoundError(f"no trial with id {trial_id}")
            changes: dict[str, Any] = {}
            if row.last_step is None or row.last_step < last:
                changes["last_step"] = last
            if found is not None and (row.best_value is None
                                      or improves(found[1], row.best_value, mode)):
                changes.update(best_value=found[1], best_step=found[0])
            self._append(trial_id, rows)
            if changes:
                self._put(self._trials, trial_id, replace(row, **changes))

    def discard_measurements(self, trial_id: int, attempt: int, from_step: int, mode: str
                             ) -> None:
        """Drop the attempt's measurements at ``from_step`` and later (a retry redoes them from
        an earlier checkpoint) and recompute the trial's best and last step from the rest."""
        with self._lock:
            row = self._trials.get(trial_id)
            if row is None:
                raise NotFoundError(f"no trial with id {trial_id}")
            rows = self._measurements[trial_id]
            kept = [m for m in rows if m.attempt != attempt or m.step < from_step]
            self._put(self._measurements, trial_id, kept)
            ours = sorted((m for m in kept if m.attempt == attempt), key=lambda m: m.step)
            found = best_point(((m.step, m.value) for m in ours), mode)
            self._put(self._trials, trial_id, replace(
                row, best_value=None if found is None else found[1],
                best_step=None if found is None else found[0],
                last_step=ours[-1].step if ours else None))

    def set_trial_node(self, trial_id: int, node: str) -> None:
        """Record where (host, node address) the trial runs."""
        with self._lock:
            row = self._trials.get(trial_id)
            if row is not None:  # as SQL's UPDATE, an unknown trial is no error
                self._put(self._trials, trial_id, replace(row, node=node[:255]))

    def finish_trial(self, trial_id: int, state: str, *, error: str | None = None,
                     checkpoints: Iterable[str] | None = None,
                     final_metrics: Mapping[str, float] | None = None) -> None:
        if state not in tuple(TrialState):
            raise ValueError(f"unknown trial state {state!r} (valid: {', '.join(TrialState)})")
        changes: dict[str, Any] = {"state": str(TrialState(state)), "finished_at": time.time()}
        if error is not None:
            changes["error"] = error[-20_000:]
        if checkpoints is not None:
            changes["checkpoints"] = jsonutil.dumps(list(checkpoints))
        if final_metrics is not None:
            changes["final_metrics"] = jsonutil.dumps(dict(final_metrics))
        with self._lock:
            row = self._trials.get(trial_id)
            if row is None:
                raise NotFoundError(f"no trial with id {trial_id}")
            self._put(self._trials, trial_id, replace(row, **changes))

    def interrupt_running_trials(self, study_id: int) -> int:
        """Mark the study's running trials interrupted (their driver is gone); returns how many."""
        now = time.time()
        with self._lock:
            running = [t for t in self._trials.values()
                       if t.study_id == study_id and t.state == TrialState.RUNNING]
            for row in running:
                self._put(self._trials, row.id, replace(row, state=str(TrialState.INTERRUPTED),
                                                        finished_at=now))
            return len(running)

    def get_trials(self, study_name: str, *,
                   measurements: bool | Collection[int] = False) -> list[TrialRecord]:
        """The study's trials by number, with their measurements if asked: ``True`` for every
        trial, or a collection of trial numbers for those trials only."""
        with self._lock:
            study = self._study_row(study_name)
            rows = sorted((t for t in self._trials.values() if t.study_id == study.id),
                          key=lambda t: t.number)
            if measurements is True:
                wanted: Collection[int] = {t.number for t in rows}
            else:
                wanted = set() if measurements is False else set(measurements)
            stored = {t.id: list(self._measurements[t.id]) for t in rows if t.number in wanted}
        records = []
        for row in rows:
            # Stable sort: measurements of one step keep the order they were recorded in.
            found = sorted(stored.get(row.id, ()), key=lambda m: (m.attempt, m.step))
            records.append(_trial_record(row, tuple(
                Measurement(step=m.step, value=m.value, metrics=jsonutil.loads_metrics(m.metrics),
                            attempt=m.attempt, recorded_at=m.recorded_at,
                            telemetry=jsonutil.loads_optional(m.telemetry),
                            dimensionality=jsonutil.loads_optional(m.dimensionality))
                for m in found)))
        return records

    # -- events --------------------------------------------------------------------------------

    def record_event(self, study_id: int, number: int, kind: str, *,
                     step: int | None = None, data: Mapping[str, Any] | None = None) -> None:
        """Record what a scheduler did to trial ``number`` (see ``EventKind``)."""
        text = jsonutil.dumps(dict(data or {}))
        with self._lock:
            if study_id not in self._studies:
                raise NotFoundError(f"no study with id {study_id}")
            event = _Event(next(self._ids), study_id, number, str(kind), step, text, time.time())
            self._put(self._events, event.id, event)

    def get_events(self, study_name: str, *, kind: str | None = None) -> list[TrialEvent]:
        """The study's trial events in the order they happened."""
        with self._lock:
            study = self._study_row(study_name)
            rows = [e for e in self._events.values() if e.study_id == study.id
                    and (kind is None or e.kind == kind)]
        return [TrialEvent(e.number, EventKind(e.kind), e.step, jsonutil.loads(e.data),
                           e.recorded_at) for e in sorted(rows, key=lambda e: e.id)]

    # -- helpers -------------------------------------------------------------------------------

    def _study_row(self, name: str) -> _Study:
        study_id = self._study_ids.get(name)
        if study_id is None:
            raise NotFoundError(f"no study named {name!r} in {self.url}")
        return self._studies[study_id]

    def _study_record(self, row: _Study) -> StudyRecord:
        trials = [Candidate(t.number, t.state, t.best_value, t.repeat_of,
                            jsonutil.loads(t.final_metrics) if t.final_metrics else {})
                  for t in self._trials.values() if t.study_id == row.id]
        counts = study_counts(trials)
        constraints = constraints_of(row.constraints)
        return StudyRecord(
            id=row.id, name=row.name, state=StudyState(row.state), metric=row.metric,
            mode=row.mode, searcher=row.searcher, spec_text=row.spec_text,
            spec_file=row.spec_file, created_at=row.created_at, total_trials=row.total_trials,
            results_dir=row.results_dir, started_at=row.started_at, finished_at=row.finished_at,
            provenance=jsonutil.loads(row.provenance), driver=jsonutil.loads(row.driver),
            trial_counts=counts.search, repeat_counts=counts.repeats,
            best_value=best_value(trials, row.mode, constraints), owner=row.owner,
            constraints=constraints,
        )


def _restore(table: MutableMapping[Any, Any], key: Any, old: Any) -> None:
    if old is _GONE:
        table.pop(key, None)
    else:
        table[key] = old


def _trial_record(row: _Trial, measurements: tuple[Measurement, ...]) -> TrialRecord:
    return TrialRecord(
        id=row.id, study_id=row.study_id, number=row.number, state=TrialState(row.state),
        config=jsonutil.loads(row.config), arm=jsonutil.loads(row.arm), seed=row.seed,
        attempts=row.attempts, error=row.error, started_at=row.started_at,
        finished_at=row.finished_at, best_value=row.best_value, best_step=row.best_step,
        last_step=row.last_step, node=row.node,
        checkpoints=tuple(jsonutil.loads(row.checkpoints)), measurements=measurements,
        repeat_of=row.repeat_of,
        final_metrics=jsonutil.loads(row.final_metrics) if row.final_metrics else {},
    )


__all__ = ["InMemoryStore"]
