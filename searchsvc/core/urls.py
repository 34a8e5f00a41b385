"""Database URLs (SQLAlchemy's ``dialect+driver://...``), read in one place."""

from __future__ import annotations


def dialect(url: str) -> str:
    """The database a URL names, without its driver: ``postgresql+psycopg://h/db`` ->
    ``postgresql``; ``memory:`` -> ``memory``."""
    return url.partition(":")[0].partition("+")[0].lower()
