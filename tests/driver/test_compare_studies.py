"""Two real studies on Ray, the second made by following the first's next_study.yaml (which
names its parent) with a warm start: the child's report compares it with its parent, and
`searchsvc compare` says the same thing."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from searchsvc import usecases
from searchsvc.driver import RunOptions
from searchsvc.store import SqlStore

pytestmark = pytest.mark.slow

PARENT = """
study: tune-x
objective: objectives.synthetic:noisy
metric: loss
mode: min
searcher: bayesian
searcher_options: {warmup: 2}
budget: {trials: 8, max_concurrent: 1, max_steps: 3}  # one worker: the comparison is the point
noise: {top_k: 1, seeds: 3}
parameters:
  variant: {role: scientific, values: [a, b]}
  x: {low: 0.0, high: 1.0}
"""


def test_a_child_made_from_next_study_is_compared_with_its_parent(ray_local, tmp_path: Path
                                                                  ) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = SqlStore(url)
    options = RunOptions(results_root=tmp_path / "results", live_progress=False)
    parent_file = tmp_path / "tune-x.yaml"
    parent_file.write_text(textwrap.dedent(PARENT))
    first = usecases.run(usecases.validate(parent_file), store, options, preflight=False)
    assert first.outcome.study.state == "completed"

    suggested = (first.report.folder / "next_study.yaml").read_text()
    assert "parent: tune-x" in suggested
    child_file = tmp_path / "child.yaml"
    child_file.write_text(suggested + "warm_start: {study: tune-x}\n")
    child = usecases.validate(child_file)
    assert (child.parent, child.warm_start) == ("tune-x", "tune-x")
    second = usecases.run(child, store, options, preflight=False)
    assert second.outcome.study.state == "completed"

    warm = store.get_study(child.name).provenance["warm_start"]
    assert warm["study"] == "tune-x" and warm["finished_trials"] == 8
    assert warm["used"] == warm["fitting_trials"] > 0  # bayesian feeds all that fit

    report = json.loads((second.report.folder / "report.json").read_text())
    comparison = report["comparison"]
    assert comparison["baseline"]["study"] == "tune-x"
    assert comparison["candidate"]["study"] == child.name
    assert comparison["baseline"]["repeats"] == comparison["candidate"]["repeats"] == 3
    low, high = comparison["ci_low"], comparison["ci_high"]
    assert math.isfinite(low) and low < comparison["difference"] < high
    expected = ("improved" if low > 0 else "worse" if high < 0 else "within_noise")
    assert comparison["verdict"] == expected
    assert any(f.startswith("Compared with the parent study 'tune-x'")
               for f in report["findings"])
    assert any(f.startswith("Warm start: ") for f in report["findings"])
    assert "Compared with the parent study" in (second.report.folder / "report.html").read_text()

    cli = subprocess.run([sys.executable, "-m", "searchsvc.cli", "compare", "tune-x",
                          child.name, "--json", "--storage", url], capture_output=True,
                         text=True, env={**os.environ}, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == comparison
    plain = subprocess.run([sys.executable, "-m", "searchsvc.cli", "compare", "tune-x",
                            child.name, "--storage", url], capture_output=True, text=True,
                           timeout=120)
    assert plain.returncode == 0 and comparison["verdict"] in plain.stdout
