"""One registry helper for every pluggable kind: entries by name, lazy ones imported on first
use, and an unknown name refused with the valid names listed, the same way for searchers,
backends, trackers, stores and schedulers."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from searchsvc.backends import BACKENDS
from searchsvc.errors import StoreError
from searchsvc.registry import Registry, UnknownNameError
from searchsvc.searchers import SEARCHERS
from searchsvc.store import STORES, InMemoryStore, open_store
from searchsvc.tracking import TRACKERS


def test_a_lazy_entry_is_imported_on_first_use() -> None:
    sys.modules.pop("tabnanny", None)  # a standard module nothing in the suite imports
    kinds: Registry[object] = Registry("thing", {"check": "tabnanny:check", "one": 1})
    assert "tabnanny" not in sys.modules and kinds.names() == ["check", "one"]
    found = kinds.get("check")
    assert found is sys.modules["tabnanny"].check and kinds.get("one") == 1
    assert "check" in kinds and "two" not in kinds and list(kinds) == ["check", "one"]


def test_an_unknown_name_lists_the_valid_ones() -> None:
    kinds: Registry[int] = Registry("thing", {"b": 2, "a": 1})
    with pytest.raises(UnknownNameError) as unknown:
        kinds.get("c")
    assert str(unknown.value) == "unknown thing 'c' (valid: a, b)"
    assert isinstance(unknown.value, KeyError)
    with pytest.raises(ValueError, match="already registered"):
        kinds.register("a", 3)
    with pytest.raises(ValueError, match="'module:attribute'"):
        kinds.register("c", "colorsys")


@pytest.mark.parametrize("registry, kind, known", [
    (SEARCHERS, "searcher", "bayesian"), (BACKENDS, "backend", "keras_tuner"),
    (TRACKERS, "tracker", "mlflow"), (STORES, "store", "postgresql"),
])
def test_every_pluggable_kind_is_a_registry(registry: Registry, kind: str, known: str) -> None:
    assert registry.kind == kind and known in registry.names()
    with pytest.raises(UnknownNameError, match=f"unknown {kind} 'nope' \\(valid: .*{known}"):
        registry.get("nope")


def test_the_schedulers_are_a_registry_by_schedule_kind() -> None:
    from searchsvc.plugins import SCHEDULERS

    assert SCHEDULERS.kind == "scheduler"
    assert SCHEDULERS.names() == ["hyperband", "population", "stopping"]  # each Schedule.kind


def test_a_store_url_of_an_unknown_kind_names_the_valid_ones() -> None:
    assert isinstance(open_store("memory:"), InMemoryStore)
    with pytest.raises(StoreError, match=r"unknown store 'mysql' \(valid: memory, postgresql, "
                                         r"sqlite\)"):
        open_store("mysql+pymysql://u:secret@host/db")


def test_every_registry_is_filled_one_way_in_one_place() -> None:
    """searchsvc/plugins.py makes every registry, each entry a lazy "module:attribute"; no
    other module of the package makes one."""
    package = Path(__file__).resolve().parents[1] / "searchsvc"
    made: dict[str, list[object]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
                node.func, "id", "")
            if called == "Registry" and path.name != "registry.py":
                entries = node.args[1] if len(node.args) > 1 else None
                assert isinstance(entries, ast.Dict), f"{path}:{node.lineno}"
                made.setdefault(path.name, []).extend(
                    v.value if isinstance(v, ast.Constant) else v for v in entries.values)
    assert list(made) == ["plugins.py"]
    entries = made["plugins.py"]
    assert entries and all(isinstance(e, str) and ":" in e for e in entries), entries


def test_every_entry_is_a_part_that_describes_itself() -> None:
    from searchsvc import plugins

    for registry, key in ((plugins.SEARCHERS, "name"), (plugins.BACKENDS, "name"),
                          (plugins.TRACKERS, "name"), (plugins.SCHEDULERS, "kind")):
        for name in registry.names():
            part = registry.get(name)
            assert getattr(part, key) == name and part.summary, (registry.kind, name)
    for name in plugins.STORES.names():
        assert callable(plugins.STORES.get(name))
