"""Pluggable parts describe themselves: a searcher registered with a capability is accepted by
the study file's validation and JSON Schema with no other edit, and the study file's code
imports none of the heavy libraries the parts use."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import jsonschema
import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field

from searchsvc.errors import SpecError
from searchsvc.plugins import SEARCHERS
from searchsvc.searchers import Proposal, Searcher, check_spec, create_searcher
from searchsvc.spec import json_schema, parse_spec

STUDY = """
study: throwaway
objective: objectives.synthetic:branin
metric: loss
mode: min
searcher: throwaway
searcher_options: {depth: 3}
budget: {trials: 4, max_steps: 9}
dimensionality: {stop_collapsed: true}
parameters:
  x: {low: 0.0, high: 1.0}
"""


class ThrowawayOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    depth: int = Field(2, ge=1, description="How deep it looks.")


class ThrowawaySearcher(Searcher):
    """A searcher no study uses: proposes the low end of every range."""

    name = "throwaway"
    summary = "a searcher registered only by this test"
    Options = ThrowawayOptions
    multi_fidelity = True  # a capability the study file's validation reads

    def propose(self, number: int) -> Proposal:
        config = {p.name: p.low for p in self.spec.parameters.values()}  # type: ignore[union-attr]
        return Proposal(number, config, self.arm_for(number)[0], self.seed_for(number))


@pytest.fixture
def throwaway() -> Iterator[str]:
    SEARCHERS.register("throwaway", f"{__name__}:ThrowawaySearcher")
    try:
        yield "throwaway"
    finally:
        SEARCHERS.unregister("throwaway")


def test_an_unregistered_searcher_is_refused() -> None:
    with pytest.raises(SpecError, match="stop_collapsed stops trials through a multi-fidelity "
                                        r"searcher \(asha, bohb, hyperband\)"):
        parse_spec(STUDY)
    spec = parse_spec(STUDY.replace("dimensionality: {stop_collapsed: true}\n", ""))
    [issue] = check_spec(spec)
    assert issue.field == "searcher" and "unknown searcher" in issue.message
    assert "throwaway" not in json_schema()["properties"]["searcher"]["enum"]


def test_a_registered_searcher_with_a_capability_needs_no_other_edit(throwaway: str) -> None:
    spec = parse_spec(STUDY)  # multi-fidelity: stop_collapsed is allowed
    assert spec.searcher == throwaway and check_spec(spec) == []
    searcher = create_searcher(spec)
    assert isinstance(searcher, ThrowawaySearcher) and searcher.options.depth == 3  # type: ignore[attr-defined]
    [issue] = check_spec(parse_spec(STUDY.replace("{depth: 3}", "{depth: 0}")))
    assert issue.field == "searcher_options.depth" and "at least 1" in issue.message

    schema = json_schema()
    assert throwaway in schema["properties"]["searcher"]["enum"]
    [rule] = [r for r in schema["allOf"]
              if r["if"]["properties"].get("searcher") == {"const": throwaway}]
    options = rule["then"]["properties"]["searcher_options"]
    assert options["properties"]["depth"]["minimum"] == 1
    data = yaml.safe_load(STUDY)
    jsonschema.validate(data, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "searcher_options": {"depth": 0}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "searcher": "nope"}, schema)


def test_the_registered_searchers_and_trackers_are_in_the_schema() -> None:
    schema = json_schema()
    assert schema["properties"]["searcher"]["enum"] == SEARCHERS.names()
    assert "keras_tuner" in schema["properties"]["searcher"]["enum"]
    assert set(schema["$defs"]["TrackingFile"]["properties"]) == {"mlflow", "tensorboard",
                                                                  "wandb"}
    asha = {"study": "s", "objective": "m:f", "metric": "loss", "mode": "min",
            "parameters": {}, "searcher": "asha", "searcher_options": {"grace_period": 0}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(asha, schema)  # asha's own options: grace_period >= 1
    jsonschema.validate({**asha, "searcher_options": {"grace_period": 2}}, schema)


def test_the_study_file_code_imports_no_heavy_library() -> None:
    """Importing searchsvc.spec, and validating a study file, load no Ray, TensorFlow, torch
    or tracker client: the parts' descriptions are read without them."""
    code = (
        "import sys, json\n"
        "from searchsvc.spec import parse_spec\n"
        f"parse_spec({STUDY.replace('throwaway', 'asha')!r})\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {'ray', "
        "'tensorflow', 'torch', 'keras', 'keras_tuner', 'autokeras', 'mlflow', 'wandb'})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == []


def test_the_store_and_tracking_packages_load_an_implementation_when_it_is_asked_for() -> None:
    """``import searchsvc.store`` and ``searchsvc.tracking`` load no store or tracker module
    (nor SQLAlchemy); naming one loads it, through the package as through the registry."""
    code = (
        "import sys, json\n"
        "import searchsvc.store, searchsvc.tracking\n"
        "def loaded():\n"
        "    return sorted(m for m in sys.modules if m.startswith(('searchsvc.store.',\n"
        "                  'searchsvc.tracking.', 'sqlalchemy')) and m.count('.') <= 2\n"
        "                  and not m.endswith(('.base', '.fanout')))\n"
        "before = loaded()\n"
        "from searchsvc.store import InMemoryStore\n"
        "from searchsvc.tracking import TensorBoardTracker\n"
        "print(json.dumps([before, loaded(), InMemoryStore.__module__,\n"
        "                  TensorBoardTracker.__module__]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    before, after, store_module, tracker_module = json.loads(done.stdout)
    assert before == []
    assert {"searchsvc.store.memory", "searchsvc.tracking.tensorboard_tracker"} <= set(after)
    assert "searchsvc.store.sql" not in after and "searchsvc.tracking.mlflow_tracker" not in after
    assert (store_module, tracker_module) == ("searchsvc.store.memory",
                                              "searchsvc.tracking.tensorboard_tracker")
