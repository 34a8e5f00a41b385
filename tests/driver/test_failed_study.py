"""A study whose every trial fails ends ``failed`` with a message that says so, and ``searchsvc
run`` exits 1 (in-process, on the session's Ray)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchsvc.cli import app
from searchsvc.core import StudyState, TrialState
from searchsvc.store import SqlStore

pytestmark = pytest.mark.slow

STUDY = """
study: doomed
objective: doomed_objective:train
metric: loss
mode: min
searcher: grid
budget: {max_concurrent: 2, max_steps: 2}
parameters:
  x: {values: [1, 2]}
"""


def test_a_study_whose_trials_all_fail_ends_failed_and_run_exits_1(ray_local,
                                                                   tmp_path: Path) -> None:
    (tmp_path / "doomed_objective.py").write_text(textwrap.dedent("""
        def train(config):
            raise RuntimeError(f"no luck with x={config['x']}")
        """))
    (tmp_path / "doomed.yaml").write_text(STUDY)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "doomed.yaml"), "--no-preflight",
                                      "--storage", url, "--results", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    summary = " ".join(result.output.split())
    assert ("study doomed: failed — 2/2 trials finished (no trial produced a usable result: "
            "all 2 search trials failed or were infeasible") in summary
    assert "resume" not in summary
    store = SqlStore(url)
    study = store.get_study("doomed")
    assert study.state == StudyState.FAILED and study.best_value is None
    assert "no trial produced a usable result" in study.provenance["failure"]
    assert [t.state for t in store.get_trials("doomed")] == [TrialState.FAILED] * 2
