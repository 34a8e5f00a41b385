"""The documentation's examples work as written: every study-file example in README.md and the
docs pages validates (a fragment merged into the full example of docs/study-file.md), the
quickstart's validate and schema commands succeed, the README stays short, its links lead to
files that exist, and the reference sections that docs/hooks.py generates cover what they
describe. The run, resume, report and service commands are exercised by tests/test_cli.py,
tests/driver and tests/service; `mkdocs build --strict` (in `make test`) checks every link and
anchor of the site."""

from __future__ import annotations

import glob
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from searchsvc.usecases import validate_text

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
FULL_EXAMPLE_PAGE = ROOT / "docs" / "study-file.md"
README_LIMIT = 12_000  # bytes: the README introduces; the docs site explains


def _yaml_blocks(path: Path) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", path.read_text(), re.S)


BLOCKS = [(path.relative_to(ROOT).as_posix(), block)
          for path in [README, *PAGES] for block in _yaml_blocks(path)]
STUDIES = [(where, b) for where, b in BLOCKS if b.startswith("study:")]
FRAGMENTS = [(where, b) for where, b in BLOCKS if not b.startswith("study:")]


def _full_example() -> str:
    [full] = [b for b in _yaml_blocks(FULL_EXAMPLE_PAGE) if b.startswith("study:")]
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


def test_the_docs_have_the_examples_this_test_reads() -> None:
    assert len(BLOCKS) >= 4
    assert _full_example().count("\n") > 20
    assert any(where == "README.md" for where, _ in STUDIES)  # the README's own short example


def test_the_full_study_file_example_validates() -> None:
    spec = validate_text(_full_example(), file="docs/study-file.md")
    assert spec.name == "digits-depth"
    assert spec.parameters["num_layers"].role == "scientific"


@pytest.mark.parametrize(("where", "study"), STUDIES, ids=[w for w, _ in STUDIES])
def test_every_whole_study_file_example_validates(where: str, study: str) -> None:
    validate_text(study, file=where)


@pytest.mark.parametrize(("where", "fragment"), FRAGMENTS, ids=[w for w, _ in FRAGMENTS])
def test_every_fragment_fits_into_the_full_example(where: str, fragment: str) -> None:
    text = _merged(yaml.safe_load(fragment))
    validate_text(text, file=where)


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


def test_the_readme_is_short() -> None:
    size = len(README.read_bytes())
    assert size < README_LIMIT, f"README.md is {size} bytes; move detail into docs/"


def test_the_readmes_links_lead_to_files_that_exist() -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text())
    local = [link.split("#")[0] for link in links if "://" not in link]
    assert local
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing


def test_nothing_points_outside_the_repository() -> None:
    texts = [README, ROOT / "mkdocs.yml", *(ROOT / "docs").rglob("*"),
             *(ROOT / "benchmarks").rglob("*")]
    found = [p.relative_to(ROOT).as_posix() for p in texts if p.is_file()
             and p.suffix in {".md", ".yml", ".py", ""}
             and re.search(r"\.\./shared|shared/DESIGN", p.read_text(errors="replace"))]
    assert not found, found


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_study_file_reference_has_every_key_of_the_schema() -> None:
    from searchsvc.spec import json_schema

    schema = json_schema()
    page = _hooks().render_study_file_schema()
    for key in schema["properties"]:
        assert f"| `{key}` |" in page, key
    for name, definition in schema["$defs"].items():
        for key in definition.get("properties", {}):
            assert f"| `{key}` |" in page, f"{name}.{key}"
    assert "<!-- generated: study-file-schema -->" in FULL_EXAMPLE_PAGE.read_text()


def test_the_generated_rest_api_page_lists_every_operation() -> None:
    hooks = _hooks()
    document = hooks.openapi_document()
    page = hooks.render_rest_api()
    for path, operations in document["paths"].items():
        for method in operations:
            assert f"### `{method.upper()} {path}`" in page
    assert "<!-- generated: rest-api -->" in (ROOT / "docs" / "rest-api.md").read_text()


def test_an_unknown_generated_section_fails_the_build() -> None:
    with pytest.raises(ValueError, match="unknown generated section"):
        _hooks().expand("<!-- generated: no-such-section -->")
