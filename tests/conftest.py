"""Shared fixtures: an isolated SEARCHSVC_HOME per test, and one small Ray for in-process runs."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

# The suite runs in parallel workers (pytest-xdist) on few cores, each starting Ray trials: one
# math-library thread per process, or OpenMP/BLAS/TensorFlow threads spinning in every process
# starve each other. Set before numpy, torch or TensorFlow load, and inherited by the workers,
# the Ray processes and the CLI subprocesses the tests start.
for _variable, _threads in [("OMP_NUM_THREADS", "1"), ("OPENBLAS_NUM_THREADS", "1"),
                            ("MKL_NUM_THREADS", "1"), ("TF_NUM_INTRAOP_THREADS", "1"),
                            ("TF_NUM_INTEROP_THREADS", "2")]:
    os.environ.setdefault(_variable, _threads)

import pytest  # noqa: E402

from searchsvc import startup  # noqa: E402

# A test worker is a searchsvc process like the CLI's: it imports every test module and, test
# by test, Ray Tune, torch and the rest; collected rarely, collection alone takes a quarter
# less CPU (13.8 -> 10.5 CPU-s a worker).
startup.collect_rarely()

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

    from searchsvc.driver.session import start_embedded_ray

    # A new Ray even when `ray start` left a cluster address on this machine, started with
    # the settings the driver's embedded Ray has.
    start_embedded_ray(num_cpus=2, log_to_driver=False)
    yield ray
    from searchsvc.driver.shutdown import shutdown_ray

    shutdown_ray()  # as the driver does: no other thread's collection can end pytest


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a private PostgreSQL server, started once for the session and deleted after
    it (searchsvc.testing.postgres.private_server); the tests that need it fail if it cannot
    start."""
    from searchsvc.testing.postgres import private_server

    with private_server() as url:
        yield url


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test on the private server, dropped
    afterwards."""
    from searchsvc.testing.postgres import fresh_database

    with fresh_database(postgres_server, f"searchsvc_test_{next(_databases)}") as url:
        yield url


_databases = itertools.count()


def pytest_configure(config: pytest.Config) -> None:
    # The subprocesses the tests start (the CLI, a service, its drivers) import the checkout's
    # `objectives`: the root goes first on a PYTHONPATH the caller may already have set.
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *[p for p in paths if p != str(ROOT)]])
    # Module and session fixtures run before the per-test home above: what they run (a shared
    # study and its report) goes to a home of this process's own, never to the user's
    # ~/.searchsvc or to a SEARCHSVC_HOME their shell sets.
    os.environ["SEARCHSVC_HOME"] = _SESSION_HOME


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_SESSION_HOME, ignore_errors=True)


_SESSION_HOME = tempfile.mkdtemp(prefix="searchsvc-tests-home-")


# Seconds each long test module takes (measured, the longest first; a rough guide to order
# by, never a limit: a stale or missing figure costs speed, not correctness).
DURATIONS = json.loads((Path(__file__).with_name("durations.json")).read_text())


# The tests marked ``last`` live here: `make test` runs them after the others, collecting this
# folder alone (collecting the whole suite again would take longer than they do).
LAST_FOLDER = ROOT / "tests" / "last"


def _check_last_tests_are_in_their_folder(items: list[pytest.Item]) -> None:
    strays = [item.nodeid for item in items if item.get_closest_marker("last") is not None
              and not item.path.is_relative_to(LAST_FOLDER)]
    if strays:
        raise pytest.UsageError(
            f"tests marked `last` belong in {LAST_FOLDER.relative_to(ROOT)}/, the folder "
            f"`make test` runs them from after the others; move: {', '.join(strays)}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``last`` run after all the others: they check what the suite left.
    Before them, the longest modules come first (tests/durations.json; then the other modules
    with ``slow`` tests): the parallel workers take whole modules in this order, so the long
    ones start early and the short ones fill in at the end, instead of one long module running
    alone after the others have finished."""
    _check_last_tests_are_in_their_folder(items)
    slow_modules = {item.module.__name__ for item in items
                    if item.module is not None and item.get_closest_marker("slow")}

    def order(item: pytest.Item) -> tuple[bool, float]:
        module = item.module.__name__ if item.module is not None else ""
        weight = DURATIONS.get(item.nodeid.split("::")[0], 1.0 if module in slow_modules else 0)
        return item.get_closest_marker("last") is not None, -weight

    items.sort(key=order)
