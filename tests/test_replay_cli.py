"""`searchsvc replay`: the early-stopping replay of a stored study, the same one its report
shows; clear errors for a study it cannot replay and for an unknown rule."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from searchsvc.cli import main
from searchsvc.store import SqlStore
from searchsvc.testing.planted import Rows, planted_study

SPEC = """
study: {name}
objective: objectives.synthetic:playbook
metric: loss
mode: min
searcher: {searcher}
budget: {{trials: 8, max_steps: 6, max_concurrent: 2}}
parameters:
  learning_rate: {{role: nuisance, low: 1.0e-4, high: 1.0, scale: log}}
"""


def never_crossing(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
    level = abs(math.log10(config["learning_rate"]) + 2)
    return [{"loss": level + 1.0 / s} for s in range(1, steps + 1)]


def test_replay_prints_the_reports_replay_and_refuses_what_it_cannot_replay(
        searchsvc_home: Path, tmp_path: Path, capsys) -> None:
    # However wide the console (80 columns without a terminal), a setting is printed whole.
    store = SqlStore(f"sqlite:///{searchsvc_home / 'searchsvc.db'}")
    planted_study(SPEC.format(name="full", searcher="quasi_random"), never_crossing, store=store)
    assert main(["replay", "full", "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert main(["report", "full", "--out", str(tmp_path), "--format", "json"]) == 0
    capsys.readouterr()
    assert replayed == json.loads((tmp_path / "report.json").read_text())["replay"]
    assert replayed["concurrency"] == 2 and replayed["trials"] == 8

    assert main(["replay", "full", "--scheduler", "asha", "--concurrency", "1"]) == 0
    table = capsys.readouterr().out
    assert "asha grace=1 rf=2" in table and "median" not in table
    assert "8 full curves, 1 at a time" in table

    assert main(["replay", "full", "--scheduler", "fifo"]) == 2
    assert "unknown early-stopping rule fifo" in capsys.readouterr().err
    unbounded = SPEC.format(name="unbounded", searcher="quasi_random").replace(
        ", max_steps: 6", "")
    planted_study(unbounded, never_crossing, store=store, steps=6)
    assert main(["replay", "unbounded"]) == 4
    assert "study 'unbounded' cannot be replayed: it has no budget.max_steps" in \
        capsys.readouterr().err
