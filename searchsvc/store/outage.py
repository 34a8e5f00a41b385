"""Riding through store outages: what a transient database failure is, and how long a store
keeps retrying one (docs/reliability.md).

A database restart, a failover or a moment of lock contention is not a reason to lose a study:
each store operation that meets a transient failure is retried with exponential backoff and
jitter (tenacity) until it succeeds or the outage window runs out; only then does it fail with
:class:`~searchsvc.errors.StoreError` (exit code 7), everything already written intact. Pure
policy: the SQL store applies it, the driver listens to it to show the outage and record it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_delay,
    wait_exponential_jitter,
)

from searchsvc.errors import StoreError

ENV = "SEARCHSVC_STORE_OUTAGE"
DEFAULT_WINDOW_S = 120.0
T = TypeVar("T")

# SQLSTATE classes and codes of failures that a retry can get past: connection exceptions
# (08), serialization failures and deadlocks (40001, 40P01), the server shutting down or
# starting up (57P01-57P03), too many connections (53300).
_TRANSIENT_SQLSTATES = ("08", "40001", "40P01", "57P01", "57P02", "57P03", "53300")
# SQLite's words for another writer holding the database (busy_timeout ran out).
_SQLITE_BUSY = ("database is locked", "database table is locked", "database is busy")


def window_from_env(value: float | None = None) -> float:
    """The outage window in seconds: ``value`` when given, else ``$SEARCHSVC_STORE_OUTAGE``, else
    120. 0 turns retrying off (the first failure stops the run, as before)."""
    if value is None:
        text = os.environ.get(ENV, "").strip()
        if not text:
            return DEFAULT_WINDOW_S
        try:
            value = float(text)
        except ValueError:
            raise StoreError(f"{ENV}={text!r}: expected a number of seconds (0 turns retrying "
                              "off)") from None
    if value < 0:
        raise StoreError(f"store outage window {value!r}: expected seconds >= 0")
    return float(value)


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a database failure that a later retry can get past: a lost or refused
    connection, a server restarting, a serialization failure or deadlock, a locked SQLite file.
    Errors in the statement or the data (a constraint, a missing table) are not."""
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated or isinstance(exc, InterfaceError):
        return True
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    if code:
        return any(str(code).startswith(prefix) for prefix in _TRANSIENT_SQLSTATES)
    text = str(exc.orig).lower()
    if any(words in text for words in _SQLITE_BUSY):
        return True
    # psycopg raises OperationalError without a SQLSTATE when it cannot connect at all
    return isinstance(exc, OperationalError) and (
        "connection" in text or "server closed" in text or "could not connect" in text)


@dataclass(frozen=True)
class Outage:
    """One stretch of time the store was unreachable (``ended`` None: still going on)."""

    started: float  # time.time()
    error: str
    ended: float | None = None

    @property
    def seconds(self) -> float:
        return (self.ended if self.ended is not None else time.time()) - self.started


OutageListener = Callable[[Outage], None]


class OutageWatch:
    """Retries store operations within the window and tells listeners when an outage starts,
    goes on (each retry) and ends. Thread-safe: one outage at a time is tracked per store."""

    def __init__(self, window_s: float | None = None):
        self.window_s = window_from_env(window_s)
        self.listeners: list[OutageListener] = []
        self.current: Outage | None = None
        self._lock = threading.Lock()
        self._local = threading.local()

    def retrying(self) -> bool:
        """Whether the operation running in this thread is a retry: its failed try may have
        committed before the connection went, so a write checks what is there first."""
        return bool(getattr(self._local, "retry", False))

    def first_try_at(self) -> float:
        """When the operation running in this thread was first tried (time.time())."""
        return float(getattr(self._local, "first", 0.0))

    def call(self, operation: Callable[[], T]) -> T:
        """Run ``operation``, retrying it on transient failures until the window runs out;
        then the last failure is raised as it was."""
        if self.window_s <= 0:
            return operation()
        tries, first = 0, time.time()

        def attempt() -> T:
            nonlocal tries
            tries += 1
            self._local.retry, self._local.first = tries > 1, first
            try:
                return operation()
            finally:
                self._local.retry = False

        retrying = Retrying(
            retry=retry_if_exception(is_transient), reraise=True,
            stop=stop_after_delay(self.window_s),
            wait=wait_exponential_jitter(multiplier=0.1, max=5.0, jitter=0.5),
            before_sleep=self._failed)
        result = retrying(attempt)
        if self.current is not None:
            self._recovered()
        return result

    def _failed(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        with self._lock:
            if self.current is None:
                self.current = Outage(time.time() - (state.seconds_since_start or 0.0),
                                      short_error(error))
            outage = self.current
        self._tell(outage)

    def _recovered(self) -> None:
        with self._lock:
            if self.current is None:
                return
            ended = Outage(self.current.started, self.current.error, time.time())
            self.current = None
        self._tell(ended)

    def _tell(self, outage: Outage) -> None:
        for listener in list(self.listeners):
            with contextlib.suppress(Exception):  # a display never turns an outage into a failure
                listener(outage)


def short_error(error: Any) -> str:
    """The first line of a database error (its driver's own message when it has one)."""
    text = str(getattr(error, "orig", None) or error or "unknown error").strip()
    return text.splitlines()[0][:300] if text else "unknown error"
