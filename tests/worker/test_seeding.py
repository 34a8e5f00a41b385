"""Every trial is seeded before the user's code runs, in the first trial on a fresh worker too:
the objective's module is imported first, so what it imports (torch here) is seeded as on a
worker that had imported it already. Each case runs in a fresh interpreter, as a new Ray worker
process is."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

OBJECTIVE = """
import json
import random
import sys

FRESH = "torch" not in sys.modules  # this import is the process's first of torch
import numpy as np
import torch

def train(config):
    with open("seeds.json", "w") as out:
        json.dump({"fresh": FRESH, "torch": torch.initial_seed(),
                   "python": random.random(), "numpy": float(np.random.random())}, out)
"""

RUN = """
import json, random, sys
from searchsvc.backends.base import RayBackend
from searchsvc.worker.context import META_KEY
from searchsvc.worker.trainable import TrialSettings, run_trial

settings = TrialSettings(study="s", objective="seeded_objective:train",
                         search_paths=(sys.argv[1],), metric="loss", mode="min", max_steps=1,
                         keep_checkpoints=False, backend=RayBackend, workdir=sys.argv[1])
run_trial({"x": 1, META_KEY: {"number": 0, "seed": int(sys.argv[2])}}, settings)
"""


def first_trial_seeds(folder: Path, seed: int) -> dict[str, object]:
    subprocess.run([sys.executable, "-c", RUN, str(folder), str(seed)], check=True,
                   capture_output=True, text=True)
    return dict(json.loads((folder / "seeds.json").read_text()))


@pytest.mark.parametrize("seed", [2**40 + 7])  # above 2**32: torch takes it whole
def test_the_first_trial_on_a_fresh_worker_is_seeded_before_its_module_imports_torch(
        tmp_path: Path, seed: int) -> None:
    (tmp_path / "seeded_objective.py").write_text(textwrap.dedent(OBJECTIVE))
    first = first_trial_seeds(tmp_path, seed)
    assert first["fresh"] is True  # torch was first imported by the objective's module
    assert first["torch"] == seed
    again = first_trial_seeds(tmp_path, seed)
    assert again == first  # python and numpy draws repeat too
