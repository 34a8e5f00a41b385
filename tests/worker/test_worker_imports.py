"""What a trial worker imports: every worker process of a study imports the trainable (and
objectives import the SDK), so the driver's heavy imports must stay out of that path."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

DRIVER_ONLY = ("sqlalchemy", "scipy", "optuna", "ray", "searchsvc.driver.run",
               "searchsvc.driver.tune_run", "searchsvc.driver.session",
               "searchsvc.driver.callbacks", "searchsvc.store", "searchsvc.searchers",
               "searchsvc.analysis")


def _modules_after(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return set(json.loads(out))


@pytest.mark.parametrize("statement", [
    "import searchsvc.worker.trainable",
    "from searchsvc.worker.sdk import report",
    "from searchsvc import sdk",
    "import searchsvc.backends",
    "import searchsvc.driver",
])
def test_a_worker_does_not_import_the_driver(statement: str) -> None:
    loaded = _modules_after(statement)
    assert not loaded & set(DRIVER_ONLY), sorted(loaded & set(DRIVER_ONLY))


def test_the_driver_names_still_come_from_the_package() -> None:
    import searchsvc.driver as driver
    from searchsvc.driver import run

    assert driver.run_study is run.run_study
    assert driver.RunOptions is run.RunOptions
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = driver.nothing


FRAMEWORKS = {"lightning": "pytorch_lightning", "huggingface": "transformers",
              "keras": "keras", "xgboost": "xgboost", "lightgbm": "lightgbm"}


@pytest.mark.parametrize("statement", [
    "import searchsvc.worker.trainable", "from searchsvc import sdk", "import searchsvc.backends",
    "import searchsvc.integrations"])
def test_a_worker_imports_no_framework_its_study_does_not_use(statement: str) -> None:
    loaded = _modules_after(statement)
    assert not loaded & {*FRAMEWORKS.values(), "tensorflow"}


@pytest.mark.parametrize("integration", sorted(FRAMEWORKS))
def test_each_integration_imports_no_framework_but_its_own(integration: str) -> None:
    # Read from the source (every import, lazy ones too): what the module itself imports,
    # apart from what its framework pulls in, and without paying for importing any of them.
    path = Path(__file__).resolve().parents[2] / "searchsvc" / "integrations" / (
        integration + ".py")
    imported = {(alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Import | ast.ImportFrom)
                for alias in node.names}
    others = {*FRAMEWORKS.values(), "tensorflow"} - {FRAMEWORKS[integration]}
    assert not imported & others, sorted(imported & others)
    assert imported <= {FRAMEWORKS[integration], "searchsvc", "__future__", "collections",
                        "pathlib", "typing", "json", "shutil", "time", "gc", "math", "torch"}
