"""What a trial worker imports: every worker process of a study imports the trainable (and
objectives import the SDK), so the driver's heavy imports must stay out of that path."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

DRIVER_ONLY = ("sqlalchemy", "scipy", "optuna", "ray", "searchsvc.runner.driver",
               "searchsvc.store", "searchsvc.searchers")


def _modules_after(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return set(json.loads(out))


@pytest.mark.parametrize("statement", [
    "import searchsvc.runner.trainable",
    "from searchsvc.runner.sdk import report",
    "import searchsvc.runner",
])
def test_a_worker_does_not_import_the_driver(statement: str) -> None:
    loaded = _modules_after(statement)
    assert not loaded & set(DRIVER_ONLY), sorted(loaded & set(DRIVER_ONLY))


def test_the_driver_names_still_come_from_the_package() -> None:
    import searchsvc.runner as runner
    from searchsvc.runner import driver

    assert runner.run_study is driver.run_study
    assert runner.RunOptions is driver.RunOptions
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = runner.nothing
