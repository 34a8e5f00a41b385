"""Database URLs (SQLAlchemy's ``dialect+driver://...``), read in one place."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote


def dialect(url: str) -> str:
    """The database a URL names, without its driver: ``postgresql+psycopg://h/db`` ->
    ``postgresql``; ``memory:`` -> ``memory``."""
    return url.partition(":")[0].partition("+")[0].lower()


def sqlite_file(url: str) -> Path | None:
    """The database file a ``sqlite:///`` URL names, a relative path taken from the current
    folder as SQLAlchemy does (None for other databases and in-memory ones)."""
    scheme, _, rest = url.partition(":")
    if dialect(scheme) != "sqlite" or not rest.startswith("///"):
        return None
    path = unquote(rest[3:].partition("?")[0])
    if not path or path == ":memory:":
        return None
    return Path(path).expanduser()
