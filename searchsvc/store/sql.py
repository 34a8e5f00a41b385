"""The study store on any SQLAlchemy database (SQLite embedded, PostgreSQL in production)."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import secrets
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from sqlalchemy import (
    Column,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    case,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

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
)
from searchsvc.core.direction import direction
from searchsvc.core.judging import USABLE_STATES, Candidate, StudyCounts, best_value
from searchsvc.core.urls import sqlite_file
from searchsvc.errors import ConflictError, NotFoundError, StoreError
from searchsvc.store import jsonutil
from searchsvc.store.base import (
    UPDATABLE_STUDY_FIELDS,
    Store,
    best_point,
    check_max_priority,
    checked_quota,
    constraints_json,
    constraints_of,
    token_hash,
)
from searchsvc.store.base import MeasurementRow as MeasurementItem
from searchsvc.store.outage import OutageWatch, is_transient, short_error
from searchsvc.store.schema import (
    Base,
    EventRow,
    MeasurementRow,
    QuotaRow,
    StudyRow,
    TokenRow,
    TrialRow,
)

MIGRATIONS = Path(__file__).with_name("migrations")
StudySummary = tuple[StudyCounts, "float | None"]  # a study's counts and best value
R = TypeVar("R")
# The key of the PostgreSQL advisory lock migrations run under (any constant of this database)
MIGRATION_LOCK_KEY = 0x5EA2C45C


# The newest migration's revision: each file in versions/ is named after its revision.
HEAD_REVISION = max(path.name.split("_", 1)[0]
                    for path in (MIGRATIONS / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def migrate(engine: Engine) -> None:
    """Bring the database's schema to the newest migration, under a lock (a file beside an
    SQLite database, an advisory lock on PostgreSQL), so that processes opening one new store at
    once migrate it once and all succeed. A database created before searchsvc used migrations
    (tables, no ``alembic_version``) is first stamped with the baseline; an empty one is
    built at the newest revision at once. A database already at :data:`HEAD_REVISION` is left
    as it is without loading Alembic (a third of a second of every command that opens the
    store)."""
    if _at_head(engine):
        return
    with _migration_lock(engine), engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            # Held to the end of this transaction; the others wait here, then find it migrated.
            connection.execute(select(func.pg_advisory_xact_lock(MIGRATION_LOCK_KEY)))
        _upgrade(connection)


def _at_head(engine: Engine) -> bool:
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return False
        versions = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    return [tuple(row) for row in versions] == [(HEAD_REVISION,)]


def _upgrade(connection: Any) -> None:
    tables = set(inspect(connection).get_table_names())
    if not tables:
        _create_at_head(connection)
        return
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    if "studies" in tables and "alembic_version" not in tables:
        command.stamp(config, "0001")
    command.upgrade(config, "head")


def _create_at_head(connection: Any) -> None:
    """An empty database gets the schema the code declares and is stamped with the newest
    revision, as Alembic's cookbook builds a database from scratch, without running every
    migration in turn (tests/store checks that the migrations build exactly this schema)."""
    Base.metadata.create_all(connection)
    version = Table("alembic_version", MetaData(),  # Alembic's own version table
                    Column("version_num", String(32), nullable=False),
                    PrimaryKeyConstraint("version_num", name="alembic_version_pkc"))
    version.create(connection)
    connection.execute(version.insert().values(version_num=HEAD_REVISION))


@contextmanager
def _migration_lock(engine: Engine) -> Iterator[None]:
    """A lock file beside an SQLite database file (nothing for other databases: they lock in
    the migration's own transaction)."""
    database = sqlite_file(engine.url.render_as_string(hide_password=False))
    if database is None:
        yield
        return
    from filelock import FileLock

    with FileLock(f"{database}.migrate.lock"):
        yield


def _riding_outages(method: Callable[..., R]) -> Callable[..., R]:
    """Run a store method through the store's outage watch: retried whole on transient
    failures (a call inside an ``atomically`` block is retried with its block instead)."""
    @functools.wraps(method)
    def call(self: SqlStore, *args: Any, **kwargs: Any) -> R:
        if getattr(self._open, "session", None) is not None:
            return method(self, *args, **kwargs)
        return self._ride(lambda: method(self, *args, **kwargs))
    return call


def searchsvc_home() -> Path:
    """Where the default database and results live: ``$SEARCHSVC_HOME`` or ``~/.searchsvc``."""
    return Path(os.environ.get("SEARCHSVC_HOME") or Path.home() / ".searchsvc").expanduser()


def default_storage_url() -> str:
    return f"sqlite:///{searchsvc_home() / 'searchsvc.db'}"


SQLITE_BUSY_S = 30  # how long a connection waits for another's lock (its busy timeout)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers (searchsvc show, the service) work while a study writes.
    _switch_to_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_S * 1000}")
    cursor.close()


def _switch_to_wal(cursor: Any) -> None:
    """Put the database in WAL mode (kept in the file: a no-op once it is). Connections that
    switch one new database together can deadlock, each holding the read lock the other must
    see released; SQLite then answers "database is locked" at once instead of waiting its
    busy timeout, so the switch is tried again, for as long as that timeout, while another
    connection finishes it."""
    import sqlite3

    deadline = time.monotonic() + SQLITE_BUSY_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


class SqlStore(Store):
    """The store in a SQL database through SQLAlchemy: SQLite (embedded, the default) or
    PostgreSQL (production). The schema is migrated with Alembic on open."""

    def __init__(self, url: str | None = None, *, outage_s: float | None = None):
        """``outage_s``: how long a store operation retries a database that went away (a
        restart, a failover, a lock held by another writer) before it fails; default
        ``$SEARCHSVC_STORE_OUTAGE`` or 120 s, 0 for no retries."""
        self.url = url or default_storage_url()
        self.engine = self._engine(self.url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._open = threading.local()  # the session of this thread's transaction() block
        self.outage = OutageWatch(outage_s)
        try:
            self.outage.call(lambda: migrate(self.engine))
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open the store at {self._safe_url()}: {exc}") from None

    def _ride(self, operation: Callable[[], R]) -> R:
        """``operation`` retried through outages; a failure past the window (or one no retry
        gets past) becomes :class:`StoreError`."""
        try:
            return self.outage.call(operation)
        except DBAPIError as exc:
            if not is_transient(exc):
                raise
            waited = (f" (still failing after {self.outage.window_s:g} s of retries; "
                      f"SEARCHSVC_STORE_OUTAGE sets how long)" if self.outage.window_s else "")
            raise StoreError(f"store {self._safe_url()} failed: {exc.orig}{waited}") from None

    def atomically(self, operation: Callable[[], R]) -> R:
        def once() -> R:
            with self.transaction():
                return operation()
        return self._ride(once)

    @staticmethod
    def _engine(url: str) -> Engine:
        if url.startswith("sqlite"):
            database = sqlite_file(url)
            if database is not None:
                database.parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(url, connect_args={"check_same_thread": False,
                                                         "timeout": SQLITE_BUSY_S})
            event.listen(engine, "connect", _sqlite_pragmas)
            return engine
        return create_engine(url, pool_pre_ping=True)

    def _safe_url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Make the store calls this thread makes inside the block one transaction: all of them
        are written, with one commit at the end, or none."""
        if getattr(self._open, "session", None) is not None:
            yield  # nested: part of the outer block
            return
        with self._session() as session:
            self._open.session = session
            try:
                yield
            finally:
                self._open.session = None

    @contextmanager
    def _session(self) -> Iterator[Session]:
        open_session = getattr(self._open, "session", None)
        if open_session is not None:
            yield open_session  # the enclosing transaction() commits
            return
        session = self._sessions()
        try:
            yield session
            session.commit()
        except BaseException:
            with contextlib.suppress(SQLAlchemyError):  # a lost connection has nothing to undo
                session.rollback()
            raise
        finally:
            session.close()

    def close(self) -> None:
        self.engine.dispose()

    def unreachable(self) -> str | None:
        try:
            with self.engine.connect() as connection:
                connection.execute(select(1))
        except SQLAlchemyError as exc:
            return short_error(exc)
        return None

    # -- studies -------------------------------------------------------------------------------

    def create_study(self, *, name: str, metric: str, mode: str, searcher: str, spec_text: str,
                     spec_file: str, total_trials: int | None, results_dir: str | None,
                     provenance: Mapping[str, Any], owner: str | None = None,
                     constraints: Sequence[Constraint] = ()) -> StudyRecord:
        """Create a study (``owner``: the service user it belongs to); :class:`ConflictError`
        if the name is taken."""
        row = StudyRow(
            name=name, state=StudyState.CREATED, metric=metric, mode=mode, searcher=searcher,
            spec_text=spec_text, spec_file=spec_file, total_trials=total_trials,
            results_dir=results_dir, created_at=time.time(),
            provenance=jsonutil.dumps(dict(provenance)), driver="{}", owner=owner,
            constraints=constraints_json(constraints),
        )
        try:
            with self._session() as s:
                s.add(row)
                s.flush()
                return self._study_record(s, row)
        except IntegrityError:
            raise ConflictError(f"a study named {name!r} already exists") from None

    def get_study(self, name: str) -> StudyRecord:
        with self._session() as s:
            return self._study_record(s, self._study_row(s, name))

    def list_studies(self, owner: str | None = None,
                     states: Collection[str] | None = None) -> list[StudyRecord]:
        """Every study, oldest first; only ``owner``'s when given, only those in ``states``
        when given."""
        with self._session() as s:
            which = []
            if owner is not None:
                which.append(StudyRow.owner == owner)
            if states is not None:
                which.append(StudyRow.state.in_(list(states)))
            rows = s.scalars(select(StudyRow).where(*which).order_by(StudyRow.created_at)).all()
            # The trial counts and bests of all listed studies in one query, not two per study.
            summaries = self._trial_summaries(s, rows)
            return [self._study_record(s, r, summaries.get(r.id)) for r in rows]

    # -- API tokens ----------------------------------------------------------------------------

    def create_token(self, user: str, *, allow_code: bool = False,
                     max_priority: int = 0) -> str:
        """A new API token for ``user`` (``allow_code``: it may upload code bundles;
        ``max_priority``: the highest priority its studies may ask for); only its hash is
        stored, so this is the one chance to read it."""
        check_max_priority(max_priority)
        token = secrets.token_urlsafe(32)
        with self._session() as s:
            s.add(TokenRow(user=user, token_hash=token_hash(token), created_at=time.time(),
                           allow_code=allow_code, max_priority=max_priority))
        return token

    def grant_for_token(self, token: str) -> TokenGrant | None:
        """Who ``token`` acts as and what it may do, or None for an unknown token."""
        with self._session() as s:
            row = s.execute(select(TokenRow.user, TokenRow.allow_code, TokenRow.max_priority)
                            .where(TokenRow.token_hash == token_hash(token))).first()
        return None if row is None else TokenGrant(row[0], bool(row[1]), int(row[2]))

    def set_quota(self, user: str, limits: Mapping[str, float]) -> None:
        limits = checked_quota(limits)
        with self._session() as s:
            row = s.get(QuotaRow, user)
            if not limits:
                if row is not None:
                    s.delete(row)
                return
            if row is None:
                row = QuotaRow(user=user)
                s.add(row)
            row.cpu, row.gpu = limits.get("CPU"), limits.get("GPU")

    def get_quotas(self) -> dict[str, dict[str, float]]:
        with self._session() as s:
            rows = s.execute(select(QuotaRow.user, QuotaRow.cpu, QuotaRow.gpu)).all()
        return {user: {k: v for k, v in (("CPU", cpu), ("GPU", gpu)) if v is not None}
                for user, cpu, gpu in rows}

    def user_for_token(self, token: str) -> str | None:
        """The user ``token`` belongs to, or None for an unknown token."""
        grant = self.grant_for_token(token)
        return None if grant is None else grant.user

    def update_study(self, name: str, **fields: Any) -> StudyRecord:
        """Set study fields: state, total_trials, results_dir, started_at, finished_at,
        driver (mapping), provenance (mapping)."""
        unknown = set(fields) - UPDATABLE_STUDY_FIELDS
        if unknown:
            raise ValueError(f"cannot update study fields {sorted(unknown)}")
        with self._session() as s:
            row = self._study_row(s, name)
            for key, value in fields.items():
                if key in ("driver", "provenance"):
                    value = jsonutil.dumps(dict(value))
                setattr(row, key, value)
            s.flush()
            return self._study_record(s, row)

    def delete_study(self, name: str) -> None:
        with self._session() as s:
            row = self._study_row(s, name)
            trial_ids = select(TrialRow.id).where(TrialRow.study_id == row.id)
            s.execute(delete(MeasurementRow).where(MeasurementRow.trial_id.in_(trial_ids)))
            s.execute(delete(EventRow).where(EventRow.study_id == row.id))
            s.execute(delete(TrialRow).where(TrialRow.study_id == row.id))
            s.delete(row)

    # -- trials --------------------------------------------------------------------------------

    def start_trial(self, study_id: int, *, number: int, config: Mapping[str, Any],
                    arm: Mapping[str, Any], seed: int, node: str | None = None,
                    repeat_of: int | None = None) -> TrialRecord:
        """Mark trial ``number`` running: a new trial, or a new attempt of an unfinished one.
        :class:`ConflictError` if that trial already finished (it must never run twice)."""
        now = time.time()
        with self._session() as s:
            row = s.scalars(select(TrialRow).where(
                TrialRow.study_id == study_id, TrialRow.number == number)).one_or_none()
            if (row is not None and row.state == TrialState.RUNNING
                    and self._written_by_failed_try(row.started_at)):
                return _trial_record_of_row(row)  # not one attempt more
            if row is None:
                self._check_study_id(s, study_id)
                row = TrialRow(
                    study_id=study_id, number=number, state=TrialState.RUNNING,
                    config=jsonutil.dumps(dict(config)), arm=jsonutil.dumps(dict(arm)),
                    seed=seed, attempts=1, started_at=now, node=node, checkpoints="[]",
                    repeat_of=repeat_of,
                )
                s.add(row)
            elif row.state in FINISHED_TRIAL_STATES:
                raise ConflictError(f"trial {number} of study {study_id} already finished "
                                    f"({row.state}); it is never run twice")
            else:
                row.attempts += 1
                row.state = TrialState.RUNNING
                row.config = jsonutil.dumps(dict(config))
                row.started_at, row.finished_at, row.error = now, None, None
                row.best_value = row.best_step = row.last_step = None
                row.final_metrics = None
                row.node = node
            s.flush()
            return _trial_record_of_row(row)

    def _written_by_failed_try(self, written_at: float | None) -> bool:
        """Whether a row written at ``written_at`` may come from this operation's failed try
        (it committed before the connection went): only on a retry, only since it began."""
        return (self.outage.retrying() and written_at is not None
                and written_at >= self.outage.first_try_at())

    def record_measurements(self, trial_id: int, attempt: int, mode: str,
                            items: Iterable[MeasurementItem]) -> None:
        """Append (step, value, metrics) rows of one attempt and update the trial's best and
        last step. A non-finite value is kept in ``metrics`` and never becomes the best."""
        now = time.time()
        rows, points = [], []
        for step, value, metrics, *extra in items:
            finite = value is not None and math.isfinite(value)
            rows.append({"trial_id": trial_id, "attempt": attempt, "step": step,
                         "value": float(value) if finite else None,  # type: ignore[arg-type]
                         "metrics": jsonutil.dumps(dict(metrics)), "recorded_at": now,
                         "telemetry": jsonutil.optional(extra, 0),
                         "dimensionality": jsonutil.optional(extra, 1)})
            points.append((step, value))
        if not rows:
            return
        last = max(step for step, _ in points)
        best_found = best_point(points, mode)
        # Core statements, no ORM load: this runs for every step every trial reports.
        # (cast: SQLAlchemy annotates ``__table__`` as any FromClause; a model's is a Table.)
        trial = cast(Table, TrialRow.__table__)
        with self._session() as s:
            found = s.execute(update(trial).where(trial.c.id == trial_id).values(
                last_step=case((trial.c.last_step.is_(None) | (trial.c.last_step < last), last),
                               else_=trial.c.last_step)))
            if not found.rowcount:  # type: ignore[attr-defined]
                raise NotFoundError(f"no trial with id {trial_id}")
            if self.outage.retrying():  # the failed try may have committed: add what it did not
                rows = self._not_yet_stored(s, trial_id, attempt, rows,
                                            self.outage.first_try_at())
            if rows:
                s.execute(insert(cast(Table, MeasurementRow.__table__)), rows)
            if best_found is not None:
                best_step, best = best_found
                better = (trial.c.best_value > best) if direction(mode).lower_is_better else (
                    trial.c.best_value < best)
                s.execute(update(trial).where(
                    trial.c.id == trial_id, trial.c.best_value.is_(None) | better,
                ).values(best_value=best, best_step=best_step))

    @staticmethod
    def _not_yet_stored(s: Session, trial_id: int, attempt: int, rows: list[dict[str, Any]],
                        since: float) -> list[dict[str, Any]]:
        """The rows of ``rows`` the store does not hold yet (same step and metrics, written
        ``since`` the write was first tried). A step may legitimately come twice (PBT restores
        a checkpoint of an earlier step), so only a retried write compares: never a fresh
        one."""
        stored = set(s.execute(select(MeasurementRow.step, MeasurementRow.metrics).where(
            MeasurementRow.trial_id == trial_id, MeasurementRow.attempt == attempt,
            MeasurementRow.recorded_at >= since,
            MeasurementRow.step.in_({r["step"] for r in rows}))).all())
        return [r for r in rows if (r["step"], r["metrics"]) not in stored]

    def discard_measurements(self, trial_id: int, attempt: int, from_step: int, mode: str
                             ) -> None:
        """Drop the attempt's measurements at ``from_step`` and later (a retry redoes them from
        an earlier checkpoint) and recompute the trial's best and last step from the rest."""
        with self._session() as s:
            s.execute(delete(MeasurementRow).where(
                MeasurementRow.trial_id == trial_id, MeasurementRow.attempt == attempt,
                MeasurementRow.step >= from_step))
            row = s.get(TrialRow, trial_id)
            if row is None:
                raise NotFoundError(f"no trial with id {trial_id}")
            kept = s.execute(select(MeasurementRow.step, MeasurementRow.value).where(
                MeasurementRow.trial_id == trial_id, MeasurementRow.attempt == attempt)).all()
            ordered = sorted(kept, key=lambda m: m[0])  # by step: values may be None
            found = best_point(((step, value) for step, value in ordered), mode)
            row.best_step, row.best_value = found if found is not None else (None, None)
            row.last_step = ordered[-1][0] if ordered else None

    def set_trial_node(self, trial_id: int, node: str) -> None:
        """Record where (host, node address) the trial runs."""
        with self._session() as s:
            s.execute(update(TrialRow).where(TrialRow.id == trial_id).values(node=node[:255]))

    def finish_trial(self, trial_id: int, state: str, *, error: str | None = None,
                     checkpoints: Iterable[str] | None = None,
                     final_metrics: Mapping[str, float] | None = None) -> None:
        if state not in tuple(TrialState):
            raise ValueError(f"unknown trial state {state!r} (valid: {', '.join(TrialState)})")
        with self._session() as s:
            row = s.get(TrialRow, trial_id)
            if row is None:
                raise NotFoundError(f"no trial with id {trial_id}")
            row.state = state
            row.finished_at = time.time()
            if error is not None:
                row.error = error[-20_000:]
            if checkpoints is not None:
                row.checkpoints = jsonutil.dumps(list(checkpoints))
            if final_metrics is not None:
                row.final_metrics = jsonutil.dumps(dict(final_metrics))

    def interrupt_running_trials(self, study_id: int) -> int:
        """Mark the study's running trials interrupted (their driver is gone); returns how many."""
        with self._session() as s:
            result = s.execute(
                update(TrialRow)
                .where(TrialRow.study_id == study_id, TrialRow.state == TrialState.RUNNING)
                .values(state=TrialState.INTERRUPTED, finished_at=time.time())
            )
            return int(result.rowcount or 0)  # type: ignore[attr-defined]

    def get_trials(self, study_name: str, *,
                   measurements: bool | Collection[int] = False) -> list[TrialRecord]:
        """The study's trials by number, with their measurements if asked: ``True`` for every
        trial, or a collection of trial numbers for those trials only (large studies)."""
        with self._session() as s:
            study_id = self._study_id(s, study_name)
            # Plain tuples, not ORM objects: building a thousand ORM objects (or reading Row
            # attributes by name) costs several times the query, and the API lists every trial
            # of a study on each dashboard refresh.
            trial = TrialRow.__table__
            rows = s.execute(select(*(trial.c[name] for name in _TRIAL_COLUMNS))
                             .where(trial.c.study_id == study_id)
                             .order_by(trial.c.number)).all()
            by_trial: dict[int, list[Measurement]] = {r[0]: [] for r in rows}
            if measurements is not False and rows:
                numbers = None if isinstance(measurements, bool) else measurements
                _read_measurements(s, study_id, numbers, by_trial)
            configs = jsonutil.loads_many([r[4] for r in rows])
            arms = jsonutil.loads_many([r[5] for r in rows])
            return [_trial_record_of(r, config, arm, tuple(by_trial[r[0]]))
                    for r, config, arm in zip(rows, configs, arms, strict=True)]

    # -- events --------------------------------------------------------------------------------

    def record_event(self, study_id: int, number: int, kind: str, *,
                     step: int | None = None, data: Mapping[str, Any] | None = None) -> None:
        """Record what a scheduler did to trial ``number`` (see ``EventKind``)."""
        text = jsonutil.dumps(dict(data or {}))
        with self._session() as s:
            self._check_study_id(s, study_id)
            if self.outage.retrying() and s.scalars(select(EventRow.id).where(
                    EventRow.study_id == study_id, EventRow.trial_number == number,
                    EventRow.kind == kind, EventRow.step == step, EventRow.data == text,
                    EventRow.recorded_at >= self.outage.first_try_at())).first() is not None:
                return  # the failed try committed it
            s.add(EventRow(study_id=study_id, trial_number=number, kind=kind, step=step,
                           data=text, recorded_at=time.time()))

    def get_events(self, study_name: str, *, kind: str | None = None) -> list[TrialEvent]:
        """The study's trial events in the order they happened."""
        with self._session() as s:
            study = self._study_row(s, study_name)
            query = select(EventRow).where(EventRow.study_id == study.id)
            if kind is not None:
                query = query.where(EventRow.kind == kind)
            rows = s.scalars(query.order_by(EventRow.id)).all()
            return [TrialEvent(r.trial_number, EventKind(r.kind), r.step, jsonutil.loads(r.data),
                               r.recorded_at) for r in rows]

    # -- helpers -------------------------------------------------------------------------------

    def _study_id(self, s: Session, name: str) -> int:
        study_id = s.scalar(select(StudyRow.id).where(StudyRow.name == name))
        if study_id is None:
            raise NotFoundError(f"no study named {name!r} in {self._safe_url()}")
        return study_id

    def _check_study_id(self, s: Session, study_id: int) -> None:
        if s.get(StudyRow, study_id) is None:
            raise NotFoundError(f"no study with id {study_id}")

    def _study_row(self, s: Session, name: str) -> StudyRow:
        row = s.scalars(select(StudyRow).where(StudyRow.name == name)).one_or_none()
        if row is None:
            raise NotFoundError(f"no study named {name!r} in {self._safe_url()}")
        return row

    @staticmethod
    def _trial_summaries(s: Session, studies: Collection[StudyRow]) -> dict[int, StudySummary]:
        """Per study: its counts and its best value (core.judging's rules), for all of
        ``studies`` in two queries. The candidates for best come from SQL: per (state, search
        or repeat) group, the extreme best value; a study with constraints also reads each
        usable search trial's final metrics. The rule itself is core's."""
        found: dict[int, StudySummary] = {}
        if not studies:
            return found
        mode = {r.id: r.mode for r in studies}
        groups: dict[int, list[tuple[str, bool, int, float | None, float | None]]] = {}
        for study_id, state, repeat, count, low, high in s.execute(
                select(TrialRow.study_id, TrialRow.state, TrialRow.repeat_of.is_not(None),
                       func.count(), func.min(TrialRow.best_value), func.max(TrialRow.best_value))
                .where(TrialRow.study_id.in_(list(mode)))
                .group_by(TrialRow.study_id, TrialRow.state,
                          TrialRow.repeat_of.is_not(None))).all():
            groups.setdefault(study_id, []).append((state, bool(repeat), count, low, high))
        constrained = {r.id: constraints_of(r.constraints) for r in studies if r.constraints}
        candidates: dict[int, list[Candidate]] = {}
        if constrained:
            for study_id, number, state, value, final in s.execute(
                    select(TrialRow.study_id, TrialRow.number, TrialRow.state,
                           TrialRow.best_value, TrialRow.final_metrics)
                    .where(TrialRow.study_id.in_(list(constrained)),
                           TrialRow.repeat_of.is_(None), TrialRow.state.in_(USABLE_STATES),
                           TrialRow.best_value.is_not(None))).all():
                candidates.setdefault(study_id, []).append(Candidate(
                    number, state, value, final_metrics=jsonutil.loads(final) if final else {}))
        for study_id, rows in groups.items():
            counts = StudyCounts.tally((state, repeat, n) for state, repeat, n, _, _ in rows)
            if study_id in constrained:
                best = best_value(candidates.get(study_id, []), mode[study_id],
                                  constrained[study_id])
            else:
                lowest = direction(mode[study_id]).lower_is_better
                best = best_value([Candidate(0, state, low if lowest else high,
                                             repeat_of=0 if repeat else None)
                                   for state, repeat, _, low, high in rows], mode[study_id])
            found[study_id] = (counts, best)
        return found

    def _study_record(self, s: Session, row: StudyRow,
                      summary: StudySummary | None = None) -> StudyRecord:
        """``summary``: what _trial_summaries gives for this study, when the caller has it
        (else one query here)."""
        if summary is None:
            summary = self._trial_summaries(s, [row]).get(row.id)
        counts, best = summary or (StudyCounts(), None)
        return StudyRecord(
            id=row.id, name=row.name, state=StudyState(row.state), metric=row.metric, mode=row.mode,
            searcher=row.searcher, spec_text=row.spec_text, spec_file=row.spec_file,
            created_at=row.created_at, total_trials=row.total_trials,
            results_dir=row.results_dir, started_at=row.started_at,
            finished_at=row.finished_at, provenance=jsonutil.loads(row.provenance),
            driver=jsonutil.loads(row.driver), trial_counts=counts.search,
            repeat_counts=counts.repeats, best_value=best, owner=row.owner,
            constraints=constraints_of(row.constraints),
        )


def _read_measurements(s: Session, study_id: int, numbers: Collection[int] | None,
                       by_trial: dict[int, list[Measurement]]) -> None:
    """Append the study's measurements (every trial's when ``numbers`` is None, else those of
    the trials numbered) to ``by_trial``, in attempt and step order. Plain tuples and one pass
    of the JSON decoder for all metrics: ORM objects and a decoder call per row cost most of a
    large study's read."""
    m, trial = MeasurementRow.__table__, TrialRow.__table__
    query = (select(m.c.trial_id, m.c.step, m.c.value, m.c.metrics, m.c.attempt,
                    m.c.recorded_at, m.c.telemetry, m.c.dimensionality)
             .join(trial, trial.c.id == m.c.trial_id)
             .where(trial.c.study_id == study_id))
    if numbers is not None:
        query = query.where(trial.c.number.in_(list(numbers)))
    # Read in batches: a large study's rows, their JSON texts and the decoder's output for all
    # of them at once would add as much again as the measurements built from them.
    result = s.execute(query.order_by(m.c.trial_id, m.c.attempt, m.c.step, m.c.id)
                       .execution_options(yield_per=_MEASUREMENT_BATCH))
    for rows in result.partitions():
        metrics = jsonutil.loads_many([r[3] for r in rows])
        telemetry = jsonutil.loads_optional_many([r[6] for r in rows])
        dimensionality = jsonutil.loads_optional_many([r[7] for r in rows])
        for r, values, measured, dims in zip(rows, metrics, telemetry, dimensionality,
                                             strict=True):
            by_trial[r[0]].append(Measurement(
                step=r[1], value=r[2], metrics=jsonutil.decoded_floats(values), attempt=r[4],
                recorded_at=r[5], telemetry=measured, dimensionality=dims))


_MEASUREMENT_BATCH = 5000


_TRIAL_COLUMNS = ("id", "study_id", "number", "state", "config", "arm", "seed", "attempts",
                  "error", "started_at", "finished_at", "best_value", "best_step", "last_step",
                  "node", "checkpoints", "repeat_of", "final_metrics")


for _name in Store.__abstractmethods__ - {"transaction"}:
    setattr(SqlStore, _name, _riding_outages(getattr(SqlStore, _name)))


def _trial_record_of_row(row: TrialRow) -> TrialRecord:
    """The record of a trial's ORM row, without its measurements."""
    return _trial_record_of(tuple(getattr(row, c) for c in _TRIAL_COLUMNS),
                            jsonutil.loads(row.config), jsonutil.loads(row.arm), ())


def _trial_record_of(row: tuple[Any, ...], config: Any, arm: Any,
                     measurements: tuple[Measurement, ...]) -> TrialRecord:
    """The record of a trials-table row selected as ``_TRIAL_COLUMNS`` (its config and arm
    already decoded)."""
    (id_, study_id, number, state, _, _, seed, attempts, error, started_at, finished_at,
     best_value, best_step, last_step, node, checkpoints, repeat_of, final) = row
    return TrialRecord(
        id=id_, study_id=study_id, number=number, state=TrialState(state), config=config,
        arm=arm, seed=seed, attempts=attempts, error=error, started_at=started_at,
        finished_at=finished_at, best_value=best_value, best_step=best_step,
        last_step=last_step, node=node, checkpoints=tuple(jsonutil.loads(checkpoints)),
        measurements=measurements, repeat_of=repeat_of,
        final_metrics=jsonutil.loads(final) if final else {},
    )
