"""A campaign on Ray: `run`, then `next` twice, gives three rounds whose timeline (CLI, REST,
web UI and Python) lists each round's decisions with their evidence; resuming a round and
restarting the service keep it; the first round's report holds the early-stopping replay."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

import searchsvc
from searchsvc import usecases
from searchsvc.cli import main
from searchsvc.driver import RunOptions
from searchsvc.service import ServiceConfig, create_app
from searchsvc.store import SqlStore

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

SPEC = """
study: camp
objective: objectives.synthetic:playbook
metric: val_loss
mode: min
searcher: grid
budget: {trials: 4, max_concurrent: 1, max_steps: 3}
noise: off
parameters:
  depth: {role: scientific, values: [1, 2]}
  learning_rate: {role: nuisance, values: [0.001, 0.01]}
"""


def test_three_rounds_make_one_campaign_on_every_surface(ray_local, tmp_path: Path, capsys,
                                                         monkeypatch) -> None:
    shutil.copytree(ROOT / "objectives", tmp_path / "objectives")
    (tmp_path / "camp.yaml").write_text(textwrap.dedent(SPEC))
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    store = SqlStore(url)
    options = RunOptions(live_progress=False, results_root=tmp_path / "results")
    token = store.create_token("ada")
    first = usecases.create(usecases.validate(tmp_path / "camp.yaml"), store, options,
                            owner="ada", preflight=False)
    done = usecases.resume(first.name, store, options, preflight=False)
    report = json.loads(done.report.files["json"].read_text())
    assert report["replay"] is not None and report["replay"]["trials"] == 4  # full curves
    assert "## Early stopping, replayed" in done.report.files["md"].read_text()

    # Round 2 as suggested, round 3 from the user's edit of the suggestion in $EDITOR.
    cli = ["--storage", url, "--results", str(tmp_path / "results"), "--no-preflight"]
    assert main(["next", "camp", *cli]) == 0
    suggested = usecases.suggested_next("camp-next", store)
    edited = suggested.replace("max_steps: 3", "max_steps: 4")
    (tmp_path / "broken.yaml").write_text(edited.replace("mode: min", "mode: sideways"))
    assert main(["next", "camp-next", "--file", str(tmp_path / "broken.yaml"), *cli]) == 2
    assert "mode" in capsys.readouterr().err  # refused before anything ran
    monkeypatch.setenv("EDITOR", "sed -i -e 's/max_steps: 3/max_steps: 4/'")
    assert main(["next", "camp-next", "--edit", *cli]) == 0
    assert "study camp-next2: completed" in capsys.readouterr().out
    names = ["camp", "camp-next", "camp-next2"]
    assert (tmp_path / "results" / "camp-next2" / "study.yaml").read_text() == edited
    assert yaml.safe_load(edited)["warm_start"] == {"study": "camp-next"}
    third = store.get_study("camp-next2")
    assert third.provenance["warm_start"]["study"] == "camp-next" and third.owner == "ada"
    assert main(["next", "camp", "--edit", "--file", "x.yaml", *cli]) == 2
    assert "--edit and --file: give one" in capsys.readouterr().err

    timeline = usecases.campaign("camp", store).as_dict()
    rounds = timeline["rounds"]
    assert [(r["round"], r["study"], r["parent"]) for r in rounds] == [
        (1, "camp", None), (2, "camp-next", "camp"), (3, "camp-next2", "camp-next")]
    assert not rounds[0]["decisions"]
    for r in rounds[1:]:
        kinds = [d["kind"] for d in r["decisions"]]
        assert "early_stopping" in kinds, kinds
        stopping = next(d for d in r["decisions"] if d["kind"] == "early_stopping")
        assert stopping["evidence"]["reason"] and "replay" in stopping["evidence"]
    assert [d["kind"] for d in rounds[2]["decisions"]][-1] == "edited"
    for r, name, steps in zip(rounds, names, (3, 3, 4), strict=True):
        data = json.loads(usecases.report(name, store, tmp_path / "r" / name,
                                          ["json"]).files["json"].read_text())
        assert r["best_value"] == data["best_trials"][0]["value"]  # the report's best
        assert r["steps"] == 4 * steps and r["trials"] == 4
    assert "learning_rate (nuisance): {0.001, 0.01}" in rounds[0]["space"]

    # Resuming a round changes nothing in the campaign.
    usecases.resume("camp-next", store, options, preflight=False)
    assert usecases.campaign("camp", store).as_dict() == timeline

    # CLI
    assert main(["campaign", "camp", "--json", "--storage", url]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(timeline))
    assert main(["campaign", "camp", "--storage", url]) == 0
    text = capsys.readouterr().out
    assert "round 3: camp-next2" in text and "decision (edited)" in text
    assert "decision (early_stopping)" in text and "[evidence: " in text
    # Python
    assert searchsvc.load("camp-next2", storage=url).campaign().as_dict() == timeline
    # REST and the UI, before and after a service restart (a new app on the same database)
    for _ in range(2):
        client = TestClient(create_app(SqlStore(url), ServiceConfig()))
        headers = {"Authorization": f"Bearer {token}"}
        got = client.get("/campaigns/camp", headers=headers)
        assert got.status_code == 200, got.text
        assert got.json() == json.loads(json.dumps(timeline))
        assert client.get("/campaigns/nope", headers=headers).status_code == 404
        page = client.get("/ui/campaigns/camp", headers=headers)
        assert page.status_code == 200
        for name in names:
            assert f'href="/ui/studies/{name}"' in page.text
        assert page.text.count('class="card round"') == 3 and "edited by hand" in page.text
        assert 'id="campaign-plot"' in page.text
        study_page = client.get("/ui/studies/camp-next", headers=headers).text
        assert 'id="campaign-link" href="/ui/campaigns/camp"' in study_page
