"""Persistence of studies, trials, measurements and events, behind the abstract :class:`Store`.

Implementations: :class:`SqlStore` (SQLAlchemy: SQLite embedded, PostgreSQL in production) and
:class:`InMemoryStore` (one process, nothing written; tests and notebooks). The records it
takes and returns are :mod:`searchsvc.core`'s. Knows nothing of Ray, searchers or analysis.
"""

from searchsvc.store.base import Store, StudyReader
from searchsvc.store.memory import InMemoryStore
from searchsvc.store.sql import SqlStore, default_storage_url, searchsvc_home


def open_store(url: str | None = None) -> Store:
    """The store at ``url`` (a SQLAlchemy URL; ``memory:`` for an in-memory one; default: the
    SQLite file under ``$SEARCHSVC_HOME``)."""
    if url == "memory:":
        return InMemoryStore()
    return SqlStore(url)


__all__ = ["InMemoryStore", "SqlStore", "Store", "StudyReader", "default_storage_url",
           "open_store", "searchsvc_home"]
