"""README's examples work as written: its study-file examples validate (the fragments merged
into the full example), and the quickstart's validate and schema commands succeed. The run,
resume, report and service commands are exercised by tests/test_cli.py, tests/driver and
tests/service."""

from __future__ import annotations

import glob
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from searchsvc.usecases import validate_text

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
YAML_BLOCKS = re.findall(r"```yaml\n(.*?)```", README, re.S)


def _full_example() -> str:
    [full] = [b for b in YAML_BLOCKS if b.startswith("study:")]
    return full


def _merged(fragment: dict[str, Any]) -> str:
    study = yaml.safe_load(_full_example())
    for key, value in fragment.items():
        if key == "parameters":
            study["parameters"] = value  # a fragment's parameters replace the example's
        elif isinstance(value, dict) and isinstance(study.get(key), dict):
            study[key] = {**study[key], **value}
        else:
            study[key] = value
    if "metrics" in fragment:  # several objectives replace the example's one, and its seed
        for key in ("metric", "mode", "noise"):  # repeats (which rank by one metric)
            study.pop(key, None)
    if study.get("searcher") == "grid" and "budget" not in fragment:
        del study["budget"]["trials"]  # "grid: may be omitted": the grid's size then
    return yaml.safe_dump(study, sort_keys=False)


def test_readme_has_the_examples_this_test_reads() -> None:
    assert len(YAML_BLOCKS) >= 4
    assert _full_example().count("\n") > 20


def test_the_full_study_file_example_validates() -> None:
    spec = validate_text(_full_example(), file="README.md")
    assert spec.name == "digits-depth"
    assert spec.parameters["num_layers"].role == "scientific"


@pytest.mark.parametrize("fragment", [b for b in YAML_BLOCKS if not b.startswith("study:")])
def test_every_fragment_fits_into_the_full_example(fragment: str) -> None:
    text = _merged(yaml.safe_load(fragment))
    validate_text(text, file="README.md")


def test_the_quickstart_validate_and_schema_commands_succeed() -> None:
    files = sorted(glob.glob(str(ROOT / "spaces" / "*.yaml")))
    assert files
    checked = subprocess.run([sys.executable, "-m", "searchsvc.cli", "validate", *files],
                             capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count(": ok") == len(files)
    schema = subprocess.run([sys.executable, "-m", "searchsvc.cli", "schema"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT, check=True)
    assert "parameters" in json.loads(schema.stdout)["properties"]
