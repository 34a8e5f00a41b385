"""searchsvc.startup: a process collects garbage rarely while it starts (the youngest
generation's threshold raised, the collector on) and as usual once its work begins."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from searchsvc import startup

USUAL = (700, 10, 10)


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As in a process that has not started yet: CPython's thresholds, nothing replaced; the
    test process's own state is put back after."""
    before = gc.get_threshold()
    monkeypatch.setattr(startup, "_usual", None)
    gc.set_threshold(*USUAL)
    yield
    gc.set_threshold(*before)


def test_starting_raises_only_the_youngest_generations_threshold_and_keeps_collecting() -> None:
    startup.collect_rarely()
    assert gc.get_threshold() == (startup.STARTING_THRESHOLD, 10, 10)
    assert gc.isenabled()
    startup.collect_rarely()  # idempotent: what it replaced is still the usual
    startup.collect_as_usual()
    assert gc.get_threshold() == USUAL


def test_as_usual_without_starting_changes_nothing() -> None:
    gc.set_threshold(5000, 20, 20)  # the process's own choice
    startup.collect_as_usual()
    assert gc.get_threshold() == (5000, 20, 20)


def test_thresholds_the_objective_set_while_starting_are_kept() -> None:
    startup.collect_rarely()
    gc.set_threshold(2000, 5, 5)  # an objective's module tuning its own collector
    startup.collect_as_usual()
    assert gc.get_threshold() == (2000, 5, 5)
    startup.collect_as_usual()  # and nothing is left to restore later
    assert gc.get_threshold() == (2000, 5, 5)


def test_the_worker_hook_names_the_function_that_starts_a_process() -> None:
    module, _, name = startup.WORKER_SETUP_HOOK.rpartition(".")
    assert module == startup.__name__ and getattr(startup, name) is startup.collect_rarely
