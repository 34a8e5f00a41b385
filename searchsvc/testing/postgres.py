"""Fresh PostgreSQL databases for the tests and benchmarks that need their own."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

# The server the tests use (`make test` starts one on 127.0.0.1:5432 if none runs).
POSTGRES_ADMIN_URL = os.environ.get("SEARCHSVC_TEST_POSTGRES",
                                    "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


@contextmanager
def fresh_database(server_url: str, name: str) -> Iterator[str]:
    """An empty database ``name`` on the PostgreSQL server of ``server_url`` (made anew if it
    exists), dropped afterwards; yields its URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    server = make_url(server_url)
    admin = create_engine(server.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


__all__ = ["POSTGRES_ADMIN_URL", "fresh_database"]
