"""Shared fixtures: an isolated SEARCHSVC_HOME per test, and one small Ray for in-process runs."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The contract suites are pytest tests living in the package: show their failed asserts' values.
pytest.register_assert_rewrite("searchsvc.testing")


@pytest.fixture(autouse=True)
def searchsvc_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SEARCHSVC_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def ray_local():
    """One embedded Ray (2 CPUs, no dashboard) shared by the in-process runner tests."""
    import ray

    # address="local": a new Ray even when `ray start` left a cluster address on this machine.
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards (the server:
    ``$SEARCHSVC_TEST_POSTGRES``, default 127.0.0.1:5432)."""
    from searchsvc.testing.postgres import POSTGRES_ADMIN_URL, fresh_database

    with fresh_database(POSTGRES_ADMIN_URL,
                        f"searchsvc_test_{os.getpid()}_{next(_databases)}") as url:
        yield url


_databases = itertools.count()


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("PYTHONPATH", str(ROOT))
