"""PostgreSQL for the tests and benchmarks: a private, throwaway server started from this
machine's binaries (:func:`private_server`), and fresh databases on a server
(:func:`fresh_database`). Nothing of the machine's own PostgreSQL is used or changed."""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The server's settings: loopback only, and no waiting on the disk (its data is thrown away).
SERVER_OPTIONS = ("-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                  "-c full_page_writes=off")


def find_pg_ctl() -> str:
    """PostgreSQL's ``pg_ctl``: the one on PATH, else the newest of Debian's packages."""
    found = shutil.which("pg_ctl")
    if found:
        return found
    debian = glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")
    if debian:
        return max(debian, key=lambda path: int(Path(path).parts[-3]))
    raise RuntimeError("no PostgreSQL server binaries (pg_ctl, initdb, postgres) on this "
                       "machine: install Debian's postgresql package (or put pg_ctl on PATH)")


@dataclass
class PrivateServer:
    """A running private server: the URL of its ``postgres`` database, and what an operator
    does to it (the reliability tests restart it under a running study)."""

    url: str
    executor: Any
    port: int

    def stop(self) -> None:
        """Stop it as ``pg_ctl stop -m fast`` does: sessions are cut at once."""
        self.executor.stop()

    def start(self) -> None:
        """Start it again; returns once it takes connections (as a restarted server is back
        for its clients), not merely once ``pg_ctl`` says it started."""
        self.executor.start()
        _wait_until_accepting(self.port)

    def restart(self, down_s: float = 1.0) -> None:
        """Stop it, keep it down ``down_s`` seconds, start it again (a minor-version upgrade,
        a failover or a configuration change, as clients see it)."""
        self.stop()
        time.sleep(down_s)
        self.start()


@contextmanager
def private_server() -> Iterator[str]:
    """A PostgreSQL server of its own (:func:`running_server`); yields the URL of its
    ``postgres`` database."""
    with running_server() as server:
        yield server.url


@contextmanager
def running_server() -> Iterator[PrivateServer]:
    """A PostgreSQL server of its own in a new temporary folder, on a free port of 127.0.0.1
    and a unix socket in that folder, stopped and deleted afterwards; yields it (the URL of its
    ``postgres`` database: superuser ``postgres``, trust authentication).

    ``initdb`` refuses to run as root, so under root the server's commands run as the
    ``postgres`` system user (``runuser``), in a folder that user owns."""
    from port_for import get_port
    from pytest_postgresql.executors import PostgreSQLExecutor

    binary = pg_ctl = find_pg_ctl()
    folder = Path(tempfile.mkdtemp(prefix="searchsvc-pg-"))
    as_root = os.geteuid() == 0
    wrapper_folder = Path(tempfile.mkdtemp(prefix="searchsvc-pg-ctl-")) if as_root else None
    try:
        if wrapper_folder is not None:
            pg_ctl = _pg_ctl_as_postgres(pg_ctl, folder, wrapper_folder)
        port = get_port(None)
        assert port is not None
        server = PostgreSQLExecutor(
            executable=pg_ctl, host="127.0.0.1", port=port, datadir=str(folder / "data"),
            unixsocketdir=str(folder), logfile=str(folder / "server.log"), startparams="-w",
            dbname="postgres", user="postgres", postgres_options=SERVER_OPTIONS)
        try:
            server.start()
        except Exception as exc:
            log = folder / "server.log"
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
            with suppress(Exception):
                server.stop()
            raise RuntimeError(f"the private PostgreSQL server ({binary}) did not start: "
                               f"{type(exc).__name__}: {exc}\n{tail}") from exc
        try:
            _wait_until_accepting(port)
            yield PrivateServer(f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres",
                                server, port)
        finally:
            with suppress(Exception):  # already stopped by its user
                server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if wrapper_folder is not None:
            shutil.rmtree(wrapper_folder, ignore_errors=True)


def _wait_until_accepting(port: int, timeout_s: float = 120.0) -> None:
    """Return once the server on ``port`` takes connections: ``pg_ctl start -w`` may return
    while it still answers "the database system is starting up"."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres",
                            connect_timeout=5).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _pg_ctl_as_postgres(pg_ctl: str, folder: Path, wrapper_folder: Path) -> str:
    """A ``pg_ctl`` that runs the real one as the ``postgres`` user, in ``folder`` (given to
    that user). The script itself lies in root's ``wrapper_folder``, out of that user's
    reach."""
    shutil.chown(folder, "postgres", "postgres")
    wrapper = wrapper_folder / "pg_ctl"
    wrapper.write_text(f"#!/bin/sh\ncd {shlex.quote(str(folder))} || exit 1\n"
                       f'exec runuser -u postgres -- {shlex.quote(pg_ctl)} "$@"\n')
    wrapper.chmod(0o700)
    return str(wrapper)


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


__all__ = ["PrivateServer", "find_pg_ctl", "fresh_database", "private_server", "running_server"]
