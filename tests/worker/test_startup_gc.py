"""A trial's worker collects garbage rarely while it starts, as every worker of searchsvc's
node does from its setup hook, and as usual from the moment the objective runs: the objective's
module is imported under the raised threshold, its function runs under CPython's. Runs in a
fresh interpreter, as a new Ray worker process is."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from searchsvc import startup

OBJECTIVE = """
import gc
import json

AT_IMPORT = gc.get_threshold()

def train(config):
    with open("thresholds.json", "w") as out:
        json.dump({"import": AT_IMPORT, "train": gc.get_threshold()}, out)
"""

RUN = """
import sys
from searchsvc import startup
startup.collect_rarely()  # what the node's setup hook runs in every worker
from searchsvc.backends.base import RayBackend
from searchsvc.worker.context import META_KEY
from searchsvc.worker.trainable import TrialSettings, run_trial

settings = TrialSettings(study="s", objective="gc_objective:train",
                         search_paths=(sys.argv[1],), metric="loss", mode="min", max_steps=1,
                         keep_checkpoints=False, backend=RayBackend, workdir=sys.argv[1])
run_trial({"x": 1, META_KEY: {"number": 0, "seed": 0}}, settings)
"""


def test_the_objectives_module_imports_collecting_rarely_and_the_objective_runs_as_usual(
        tmp_path: Path) -> None:
    (tmp_path / "gc_objective.py").write_text(textwrap.dedent(OBJECTIVE))
    subprocess.run([sys.executable, "-c", RUN, str(tmp_path)], check=True,
                   capture_output=True, text=True)
    seen = json.loads((tmp_path / "thresholds.json").read_text())
    assert seen["import"] == [startup.STARTING_THRESHOLD, 10, 10]
    assert seen["train"] == [700, 10, 10]  # CPython's own
