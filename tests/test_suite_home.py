"""The suite never writes to the user's searchsvc home: module fixtures (which run before the
per-test home) get a home of the test process's own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from searchsvc.store.sql import searchsvc_home as current_home


@pytest.fixture(scope="module")
def module_home() -> Path:
    return current_home()


def test_a_module_fixtures_studies_land_outside_the_users_home(module_home: Path) -> None:
    users = Path.home() / ".searchsvc"
    assert not module_home.is_relative_to(users), module_home
    assert module_home.is_dir() and os.access(module_home, os.W_OK)


def test_each_test_has_a_home_of_its_own(module_home: Path, searchsvc_home: Path) -> None:
    assert current_home() == searchsvc_home != module_home
