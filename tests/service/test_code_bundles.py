"""A team member submits a study whose objective lives only in their own folder: `searchsvc
submit` packs the folder, the service stores it under its hash and records it in the study's
provenance, and the study's driver ships it to the Ray workers of a two-node loopback cluster,
where every trial imports the objective from the bundle and runs."""

from __future__ import annotations

import io
import tarfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchsvc.codebundle import digest, pack
from searchsvc.core import TrialState
from searchsvc.testing.loopback import LoopbackCluster
from searchsvc.testing.served import running_service

pytestmark = pytest.mark.slow

TRAIN = '''
import ray
from ray import tune

from ada_lib.schedule import decay  # a package of the same folder: the whole folder ships
from searchsvc import sdk


def train(config):
    ctx = ray.get_runtime_context()
    node = ctx.get_node_id()
    on_head = any(n["NodeID"] == node and "node:__internal_head__" in n["Resources"]
                  for n in ray.nodes())
    # The uploaded folder is the working directory on every node: its data reads by a
    # relative path, as in `python ada_train.py`.
    offset = float(open("data/offset.txt").read())
    (sdk.trial_dir() / "offset.txt").write_text(str(offset))
    for step in range(1, 4):
        tune.report({"loss": decay(config["lr"], step) + offset, "node": node,
                     "on_head": int(on_head), "module_file": __file__})
'''
STUDY = """
study: ada-own-code
objective: ada_train:train
metric: loss
mode: min
searcher: random
seed: 0
budget: {trials: 4, max_concurrent: 2, max_steps: 3}
parameters:
  lr: {role: nuisance, low: 0.01, high: 1.0, scale: log}
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LoopbackCluster]:
    """A head that runs nothing and one worker node with 2 CPUs."""
    c = LoopbackCluster(tmp_path / "ray-home").start()
    try:
        c.add_worker(cpus=2)
        yield c
    finally:
        c.stop()


def users_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "ada-project"
    (folder / "ada_lib").mkdir(parents=True)
    (folder / "ada_train.py").write_text(textwrap.dedent(TRAIN))
    (folder / "ada_lib" / "__init__.py").write_text("")
    (folder / "data").mkdir()
    (folder / "data" / "offset.txt").write_text("0.25\n")
    (folder / "ada_lib" / "schedule.py").write_text(
        "def decay(lr, step):\n    return abs(lr - 0.1) + 1.0 / step\n")
    (folder / "study.yaml").write_text(STUDY)
    (folder / ".gitignore").write_text("secrets.env\n")
    (folder / "secrets.env").write_text("API_KEY=do-not-upload\n")
    return folder


def test_a_users_own_code_runs_on_the_worker_node_of_a_cluster(
        tmp_path: Path, cluster: LoopbackCluster) -> None:
    folder = users_folder(tmp_path)
    with running_service(tmp_path, args=["--address", cluster.address],
                         env=cluster.env) as s:
        token = s.store.create_token("ada", allow_code=True)
        # The server cannot import the objective: it is in no folder on its import path.
        assert not any((p / "ada_train.py").exists() for p in s.pythonpath)
        submitted = s.cli("submit", str(folder / "study.yaml"), "--no-preflight", token=token,
                          cwd=tmp_path)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        assert "code: " in submitted.stdout and "6 files" in submitted.stdout
        waited = s.cli("status", "ada-own-code", "--wait", "--every", "1", token=token,
                       timeout=240)
        assert waited.returncode == 0, waited.stdout + waited.stderr + s.log.read_text()[-3000:]

        study = s.store.get_study("ada-own-code")
        code = study.provenance["code"]
        assert code["sha256"] == digest(pack(folder))  # content-addressed: the same bytes
        bundle = Path(code["path"])
        assert bundle == s.home / "code" / code["sha256"]
        with tarfile.open(fileobj=io.BytesIO(pack(folder)), mode="r:gz") as tar:
            assert "secrets.env" not in tar.getnames()  # .gitignore is respected
        assert not (bundle / "secrets.env").exists()
        trials = s.store.get_trials("ada-own-code", measurements=True)
        assert [t.state for t in trials] == [TrialState.COMPLETED] * 4
        for trial in trials:
            last = trial.measurements[-1].metrics
            assert last["on_head"] == 0 and trial.node.endswith(f"node {last['node']}")
            # Imported from the copy Ray unpacked on the worker, not from the user's folder.
            assert not str(last["module_file"]).startswith(str(folder))
            assert min(m.value for m in trial.measurements) >= 0.25  # it read its data
        # What each trial wrote to sdk.trial_dir() on the worker node is in the results.
        written = sorted(Path(study.results_dir or "").glob("ray/run-*/trial_*/offset.txt"))
        assert [p.read_text() for p in written] == ["0.25"] * 4
        # Submissions are checked against the cluster's nodes: 3 workers of 1 CPU each cannot
        # fit on its 2 CPUs, so the study is refused at once, not queued to wait forever.
        assert s.call("GET", "/health")["cluster"] == "2 node(s): 2 CPUs, 0 GPUs in all"
        (folder / "study.yaml").write_text(
            STUDY.replace("ada-own-code", "too-big") + "resources: {cpu: 1, workers: 3}\n")
        refused = s.cli("submit", str(folder / "study.yaml"), "--no-preflight", token=token,
                        cwd=tmp_path)
        assert refused.returncode == 2, refused
        assert "3 workers x 1 CPU is 3 CPUs per trial, but this Ray cluster has 2 in all" in (
            refused.stdout + refused.stderr)
        assert [st.name for st in s.store.list_studies()] == ["ada-own-code"]
