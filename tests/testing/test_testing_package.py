"""searchsvc.testing is what tests and benchmarks share: benchmarks and the package never import
the tests, and only searchsvc.testing itself imports searchsvc.testing (it needs pytest)."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

from searchsvc.testing.served import ROOT, Service, free_port


def imported(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module, node.lineno


def test_benchmarks_and_the_package_never_import_the_tests() -> None:
    found = [f"{path.relative_to(ROOT)}:{line} imports {name}"
             for folder in ("benchmarks", "searchsvc") for path in (ROOT / folder).rglob("*.py")
             for name, line in imported(path) if name.split(".")[0] == "tests"]
    assert found == []


def test_only_the_testing_package_imports_itself() -> None:
    testing = ROOT / "searchsvc" / "testing"
    found = [f"{path.relative_to(ROOT)}:{line}" for path in (ROOT / "searchsvc").rglob("*.py")
             if testing not in path.parents
             for name, line in imported(path) if name.startswith("searchsvc.testing")]
    assert found == []


def test_the_served_service_runs_from_the_checkout_with_its_objectives(tmp_path: Path) -> None:
    service = Service(tmp_path, user="bob")  # not started: no server, no Ray
    try:
        assert (ROOT / "objectives" / "synthetic.py").is_file()
        assert service.env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)
        assert service.store.user_for_token(service.token) == "bob"
        assert service.url_db == f"sqlite:///{tmp_path / 'service.db'}"
    finally:
        service.store.close()


def test_a_free_port_can_be_listened_on() -> None:
    import socket

    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
