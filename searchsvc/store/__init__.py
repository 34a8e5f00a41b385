"""Persistence of studies, trials, measurements and events, behind the abstract :class:`Store`.

Implementations: :class:`SqlStore` (SQLAlchemy: SQLite embedded, PostgreSQL in production) and
:class:`InMemoryStore` (one process, nothing written; tests and notebooks). The records it
takes and returns are :mod:`searchsvc.core`'s. Knows nothing of Ray, searchers or analysis.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from searchsvc.core.urls import dialect
from searchsvc.errors import StoreError
from searchsvc.plugins import STORES
from searchsvc.registry import UnknownNameError
from searchsvc.store.base import Store, StudyReader

if TYPE_CHECKING:
    from searchsvc.store.memory import InMemoryStore
    from searchsvc.store.sql import SqlStore, default_storage_url, searchsvc_home

# Imported when first asked for: SQLAlchemy and the migrations load only with a SQL store.
_LAZY = {"InMemoryStore": "searchsvc.store.memory", "SqlStore": "searchsvc.store.sql",
         "default_storage_url": "searchsvc.store.sql", "searchsvc_home": "searchsvc.store.sql"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_store(url: str | None = None) -> Store:
    """The store at ``url`` (a SQLAlchemy URL of SQLite or PostgreSQL; ``memory:`` for an
    in-memory one; default: the SQLite file under ``$SEARCHSVC_HOME``)."""
    from searchsvc.store.sql import default_storage_url

    url = url or default_storage_url()
    scheme = dialect(url)
    try:
        opener = STORES.get(scheme)
    except UnknownNameError as exc:
        raise StoreError(f"store URL {scheme}://...: {exc}") from None
    store: Store = opener(url)
    return store


__all__ = ["STORES", "InMemoryStore", "SqlStore", "Store", "StudyReader", "default_storage_url",
           "open_store", "searchsvc_home"]
