"""The store contract: what every backend (SQLAlchemy on SQLite/PostgreSQL, in memory) does.

The store is persistence only: it takes and returns the records of :mod:`searchsvc.core` and
knows nothing of Ray, searchers or analysis. ``searchsvc.testing.store_contract`` is the test
suite every implementation passes.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from searchsvc.core import Constraint, Curve, StudyRecord, TokenGrant, TrialEvent, TrialRecord
from searchsvc.core.records import MAX_PRIORITY

T = TypeVar("T")

# (step, value, metrics), optionally followed by the step's telemetry and its dimensionality
MeasurementRow = (tuple[int, "float | None", Mapping[str, Any]]
                  | tuple[int, "float | None", Mapping[str, Any], Mapping[str, Any]]
                  | tuple[int, "float | None", Mapping[str, Any], Mapping[str, Any],
                          Mapping[str, Any]])

# What Store.update_study may set.
UPDATABLE_STUDY_FIELDS = frozenset({"state", "total_trials", "results_dir", "started_at",
                                    "finished_at", "driver", "provenance"})


def token_hash(token: str) -> str:
    """What a store keeps of an API token (never the token itself)."""
    return hashlib.sha256(token.encode()).hexdigest()


def check_max_priority(max_priority: int) -> None:
    """ValueError, echoing it, for a token's priority cap outside 0..MAX_PRIORITY."""
    if not 0 <= max_priority <= MAX_PRIORITY:
        raise ValueError(f"a token's max priority is between 0 and {MAX_PRIORITY} "
                         f"(got {max_priority!r})")


QUOTA_RESOURCES = ("CPU", "GPU")


def checked_quota(limits: Mapping[str, float]) -> dict[str, float]:
    """``limits`` as a quota keeps them; ValueError, echoing the value, for a resource other
    than :data:`QUOTA_RESOURCES` or a negative limit."""
    unknown = set(limits) - set(QUOTA_RESOURCES)
    if unknown:
        raise ValueError(f"a quota limits {' and '.join(QUOTA_RESOURCES)} (got {sorted(unknown)})")
    negative = {k: v for k, v in limits.items() if v < 0}
    if negative:
        raise ValueError(f"a quota's limits are not negative (got {negative})")
    return {k: float(v) for k, v in limits.items()}


def best_point(points: Iterable[tuple[int, float | None]], mode: str
               ) -> tuple[int, float] | None:
    """(step, value) of the best finite value of (step, value) ``points`` in their order (the
    earliest on ties): the rule both stores apply to a trial's best."""
    return Curve(points).best(mode)


def constraints_json(constraints: Sequence[Constraint]) -> str | None:
    """How both stores keep a study's constraints (None: it has none)."""
    return json.dumps([c.to_dict() for c in constraints]) if constraints else None


def constraints_of(text: str | None) -> tuple[Constraint, ...]:
    return tuple(Constraint.from_dict(c) for c in json.loads(text)) if text else ()


class Store(ABC):
    """Studies, trials, measurements, events and API tokens.

    Contract: every method is a complete transaction; what a method has returned from is durable
    (inside :meth:`transaction`, once that block has ended). A trial number is unique within its
    study; a finished trial is never started again. Unknown names raise
    :class:`~searchsvc.errors.NotFoundError`; taken names :class:`~searchsvc.errors.ConflictError`.
    A trial's ``best_value`` is the best *finite* value of the study's metric over its latest
    attempt; a non-finite value is kept in its measurement's metrics only.
    """

    url: str

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """Make the calls this thread makes inside the block one transaction (all or none)."""

    def atomically(self, operation: Callable[[], T]) -> T:
        """Run ``operation`` (store calls, nothing else that must not happen twice) as one
        transaction and return its result. A store that rides through outages runs it again
        when the database failed before the commit; a caller changes its own state only after
        this returns."""
        with self.transaction():
            return operation()

    def close(self) -> None:  # noqa: B027 - optional for implementations
        """Release connections (nothing to do by default)."""

    def unreachable(self) -> str | None:
        """Why the store cannot be reached right now, asked once without retrying (None: it
        can; a health check's question)."""
        return None

    # -- studies --
    @abstractmethod
    def create_study(self, *, name: str, metric: str, mode: str, searcher: str, spec_text: str,
                     spec_file: str, total_trials: int | None, results_dir: str | None,
                     provenance: Mapping[str, Any], owner: str | None = None,
                     constraints: Sequence[Constraint] = ()) -> StudyRecord:
        """Create a study in state ``created``; ConflictError if the name is taken.
        ``constraints``: the study file's bounds, which its best must meet."""

    @abstractmethod
    def get_study(self, name: str) -> StudyRecord:
        """The study with its counts (search trials by state, seed repeats by state) and its
        best value, both by the rules of :mod:`searchsvc.core.judging`."""

    @abstractmethod
    def list_studies(self, owner: str | None = None,
                     states: Collection[str] | None = None) -> list[StudyRecord]:
        """Every study, oldest first; only ``owner``'s when given, only those in ``states``."""

    @abstractmethod
    def update_study(self, name: str, **fields: Any) -> StudyRecord:
        """Set study fields: state, total_trials, results_dir, started_at, finished_at,
        driver (mapping), provenance (mapping); ValueError names an unknown field."""

    @abstractmethod
    def delete_study(self, name: str) -> None:
        """Delete the study with its trials, measurements and events."""

    # -- API tokens --
    @abstractmethod
    def create_token(self, user: str, *, allow_code: bool = False,
                     max_priority: int = 0) -> str:
        """A new API token for ``user`` (``allow_code``: it may upload code bundles;
        ``max_priority``: the highest priority its studies may ask for); only its hash is
        kept, so this is the one chance to read it."""

    @abstractmethod
    def grant_for_token(self, token: str) -> TokenGrant | None:
        """Who ``token`` acts as and what it may do, or None for an unknown token."""

    def user_for_token(self, token: str) -> str | None:
        """The user ``token`` belongs to, or None for an unknown token."""
        grant = self.grant_for_token(token)
        return None if grant is None else grant.user

    @abstractmethod
    def set_quota(self, user: str, limits: Mapping[str, float]) -> None:
        """Set ``user``'s quota: the most of each resource (``CPU``, ``GPU``) their studies
        may hold at once; a resource not named has no limit, and no limits remove the quota.
        ValueError, echoing it, for a negative limit or another resource."""

    @abstractmethod
    def get_quotas(self) -> dict[str, dict[str, float]]:
        """Every user's quota, by user (users without one are not keys)."""

    # -- trials --
    @abstractmethod
    def start_trial(self, study_id: int, *, number: int, config: Mapping[str, Any],
                    arm: Mapping[str, Any], seed: int, node: str | None = None,
                    repeat_of: int | None = None) -> TrialRecord:
        """Mark trial ``number`` running: a new trial, or a new attempt of an unfinished one.
        ``repeat_of``: the number of the trial whose config this one reruns with a new seed.
        ConflictError if that trial already finished (it must never run twice)."""

    @abstractmethod
    def record_measurements(self, trial_id: int, attempt: int, mode: str,
                            items: Iterable[MeasurementRow]) -> None:
        """Append (step, value, metrics) rows of one attempt of trial ``trial_id`` (the
        record's ``id``) and update its best and last step. A row may carry a fourth element,
        the step's telemetry (a mapping; ``Measurement.telemetry``, empty when absent), and a
        fifth, its dimensionality (``Measurement.dimensionality``)."""

    @abstractmethod
    def discard_measurements(self, trial_id: int, attempt: int, from_step: int, mode: str
                             ) -> None:
        """Drop the attempt's measurements at ``from_step`` and later (a retry redoes them from
        an earlier checkpoint) and recompute the trial's best and last step from the rest."""

    @abstractmethod
    def set_trial_node(self, trial_id: int, node: str) -> None:
        """Record where (host, node address) the trial runs."""

    @abstractmethod
    def finish_trial(self, trial_id: int, state: str, *, error: str | None = None,
                     checkpoints: Iterable[str] | None = None,
                     final_metrics: Mapping[str, float] | None = None) -> None:
        """Set the trial's final state (ValueError for an unknown state); ``final_metrics``:
        the last finite value of every metric it reported (``TrialRecord.final_metrics``)."""

    @abstractmethod
    def interrupt_running_trials(self, study_id: int) -> int:
        """Mark the study's running trials interrupted (their driver is gone); how many."""

    @abstractmethod
    def get_trials(self, study_name: str, *,
                   measurements: bool | Collection[int] = False) -> list[TrialRecord]:
        """The study's trials by number, with their measurements if asked: ``True`` for every
        trial, or a collection of trial numbers for those trials only."""

    # -- events --
    @abstractmethod
    def record_event(self, study_id: int, number: int, kind: str, *,
                     step: int | None = None, data: Mapping[str, Any] | None = None) -> None:
        """Record what a scheduler did to trial ``number`` (an ``EventKind``)."""

    @abstractmethod
    def get_events(self, study_name: str, *, kind: str | None = None) -> list[TrialEvent]:
        """The study's trial events in the order they happened."""


class StudyReader(Protocol):
    """The reads of stored studies that a report and the Python API's ``Study`` make: a
    :class:`Store` has them, and so has the service client's ``RemoteStudies``
    (:mod:`searchsvc.client`), so a study on a server is analysed by the same code."""

    def get_study(self, name: str) -> StudyRecord: ...

    def get_trials(self, study_name: str, *,
                   measurements: bool | Collection[int] = False) -> list[TrialRecord]: ...

    def get_events(self, study_name: str, *, kind: str | None = None) -> list[TrialEvent]: ...


__all__ = ["UPDATABLE_STUDY_FIELDS", "MeasurementRow", "Store", "StudyReader", "best_point",
           "token_hash"]
