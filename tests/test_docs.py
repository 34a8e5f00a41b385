"""The documentation's examples work as written: every study-file example in README.md and the
docs pages validates (a fragment merged into the full example of docs/study-file.md), the
quickstart's validate and schema commands succeed, the README's training script validates
and trains from its folder as the README lays it out, the README stays short, its links lead to
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


# Pages whose study file runs a script of an example folder: validated from that folder, where
# the script is.
RUN_FROM = {"docs/command-objectives.md": ROOT / "examples" / "command"}


@pytest.mark.parametrize(("where", "study"), STUDIES, ids=[w for w, _ in STUDIES])
def test_every_whole_study_file_example_validates(where: str, study: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(RUN_FROM.get(where, ROOT))
    validate_text(study, file=where)


@pytest.mark.parametrize(("where", "fragment"), FRAGMENTS, ids=[w for w, _ in FRAGMENTS])
def test_every_fragment_fits_into_the_full_example(where: str, fragment: str) -> None:
    text = _merged(yaml.safe_load(fragment))
    validate_text(text, file=where)


def test_the_quickstart_validate_and_schema_commands_succeed() -> None:
    # The example study files, and every folder of the examples gallery's.
    files = sorted(glob.glob(str(ROOT / "spaces" / "*.yaml")))
    gallery = sorted(glob.glob(str(ROOT / "examples" / "*" / "study.yaml")))
    assert files and len(gallery) >= 8
    files += gallery
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


# --- the README's own training script --------------------------------------------------------


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def _readme_objective() -> tuple[str, str]:
    """The README's training script and the study file that names it."""
    [code] = [b for b in _python_blocks(README) if "def train(config)" in b]
    [study] = [b for where, b in STUDIES if where == "README.md" and "train_mlp:train" in b]
    return code, study


def test_the_readme_shows_an_objective_with_the_sdk_and_resources() -> None:
    code, study = _readme_objective()
    for used in ("sdk.report(", "sdk.max_steps(", "sdk.device()"):
        assert used in code, used
    # per-trial resources that run where the example is copied (a GPU-less laptop too), and
    # how to ask for a GPU
    assert yaml.safe_load(study)["resources"] == {"cpu": 1}
    assert "gpu: 1" in study
    # the guide walks through the same script
    assert code in (ROOT / "docs" / "your-training-script.md").read_text()


def test_the_readmes_objective_validates_and_trains_from_its_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's layout: the script, its study file and data/points.csv in one folder, the
    study validated there by the command line, the script trained from there (two epochs, in
    this process, as a trial runs it) and reporting the study's metric each epoch."""
    import numpy as np

    from searchsvc import sdk

    code, study = _readme_objective()
    (tmp_path / "train_mlp.py").write_text(code)
    (tmp_path / "width.yaml").write_text(study)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 4))
    labels = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0).astype(int)
    (tmp_path / "data").mkdir()
    np.savetxt(tmp_path / "data" / "points.csv", np.column_stack([x, labels]), delimiter=",")
    checked = subprocess.run([sys.executable, "-m", "searchsvc.cli", "validate", "width.yaml"],
                             capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = validate_text(study, file="README.md")
    module = importlib.import_module(spec.objective.partition(":")[0])
    try:
        reports = sdk.run_locally(module.train, {"width": 16, "learning_rate": 1e-2},
                                  metric="val_error", max_steps=2)
    finally:
        sys.modules.pop(module.__name__, None)
    assert [sorted(r) for r in reports] == [["val_error"], ["val_error"]]
    assert all(0.0 <= r["val_error"] <= 1.0 for r in reports)


# --- the generated references ----------------------------------------------------------------


def test_the_generated_cli_reference_has_every_command_and_option() -> None:
    hooks = _hooks()
    page = hooks.render_cli_reference()
    commands = hooks._cli_commands()
    names = {path for path, _, _ in commands}
    assert {"searchsvc run", "searchsvc submit", "searchsvc tokens create"} <= names
    for path, command, _ in commands:
        assert f"### `{path}`" in page, path
        section = page.split(f"### `{path}`", 1)[1].split("\n### ", 1)[0]
        for param in command.params:
            for name in [*param.opts, *param.secondary_opts]:
                if param.param_type_name == "option" and not param.hidden:
                    assert name in section, (path, name)
    assert "`--no-preflight`" in page.split("### `searchsvc submit`", 1)[1].split("\n### ")[0]
    assert "<!-- generated: cli-reference -->" in (ROOT / "docs" / "cli.md").read_text()


def test_the_generated_searcher_options_have_every_searcher_and_option() -> None:
    from searchsvc.searchers import SEARCHERS, searcher_names

    page = _hooks().render_searcher_options()
    for name in searcher_names():
        section = page.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        for option in SEARCHERS.get(name).Options.model_json_schema().get("properties", {}):
            assert f"| `{option}` |" in section, (name, option)
    assert ("<!-- generated: searcher-options -->"
            in (ROOT / "docs" / "searcher-options.md").read_text())
