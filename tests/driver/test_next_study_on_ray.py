"""The boundary case end to end on Ray: the best learning rate lies past the declared high
edge; the report flags it, and running the suggested next study moves the best trial off the
edge (into the interior of the new range, near the true optimum)."""

from __future__ import annotations

import json
import math
import shutil
import textwrap
from pathlib import Path

import pytest

from objectives.synthetic import playbook_best_lr
from searchsvc.driver import RunOptions, create_study, run_study
from searchsvc.reporting import write_report
from searchsvc.searchers import create_searcher
from searchsvc.store import SqlStore, Store
from searchsvc.usecases import validate as validate_file

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def run(path: Path, store: Store) -> None:
    spec = validate_file(path)
    options = RunOptions(live_progress=False)
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    run_study(spec.name, store, options, searcher=searcher)


def test_next_study_moves_the_best_trial_off_the_edge(ray_local, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "objectives", tmp_path / "objectives")
    first = tmp_path / "edge.yaml"
    first.write_text(textwrap.dedent("""
        study: edge
        objective: objectives.synthetic:playbook
        metric: val_loss
        mode: min
        searcher: quasi_random
        seed: 0
        budget: {trials: 16, max_concurrent: 1, max_steps: 6}
        resources: {cpu: 1}
        parameters:
          depth: {role: fixed, value: 1}
          learning_rate: {role: nuisance, low: 1.0e-5, high: 1.0e-2, scale: log}
          weight_decay: {role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}
        """))
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    run(first, store)
    files = write_report(store, "edge", tmp_path / "edge-report")
    report = json.loads(files.files["json"].read_text())
    checks = {c["parameter"]: c for c in report["boundary_checks"]}
    assert checks["learning_rate"]["status"] == "near_high"
    assert checks["weight_decay"]["status"] == "ok"
    best_lr = report["best_trials"][0]["config"]["learning_rate"]
    assert best_lr > 10 ** -2.5  # the first study's best sits at its high edge

    nxt = tmp_path / "next_study.yaml"
    shutil.copy(files.files["next_study"], nxt)
    run(nxt, store)
    files = write_report(store, "edge-next", tmp_path / "next-report")
    report = json.loads(files.files["json"].read_text())
    spec = validate_file(nxt)
    lr = spec.parameters["learning_rate"]
    new_best = report["best_trials"][0]["config"]["learning_rate"]
    position = lr.to_unit(new_best)  # type: ignore[union-attr]
    assert 0.15 < position < 0.85, (new_best, lr)  # off both edges of the new range
    assert abs(math.log10(new_best) - math.log10(playbook_best_lr(1))) < 0.5
    checks = {c["parameter"]: c for c in report["boundary_checks"]}
    assert checks["learning_rate"]["status"] == "ok"
