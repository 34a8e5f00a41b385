"""A plain argparse training script, not written for searchsvc, as a study's objective (the
``command`` backend) on a real Ray: from the command line in its own folder with its data
beside it, and from Python. ASHA stops some of its trials and every stopped script is gone; a
script that raises shows its last lines of stderr in ``show`` and in the report; a killed
study's interrupted scripts go on from their checkpoints when it is resumed."""

from __future__ import annotations

import os
import signal
import textwrap
from pathlib import Path
from typing import Any

import pytest

import searchsvc
from searchsvc.cli import main
from searchsvc.core import TrialState
from searchsvc.store import open_store
from searchsvc.testing.processes import running

pytestmark = pytest.mark.slow

TRAIN = '''
"""Trains nothing real; prints `epoch=N val_loss=X` and saves ckpt.json to --ckpt-dir."""
import argparse
import json
import os
import time
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--epochs", type=int, default=6)
parser.add_argument("--ckpt-dir", required=True)
args = parser.parse_args()

Path("pids").mkdir(exist_ok=True)
(Path("pids") / str(os.getpid())).write_text("")
scale = float(Path("data/scale.txt").read_text())  # its data, by a relative path
if args.lr > 0.85:
    raise FloatingPointError(f"loss diverged with lr={args.lr}")
for epoch in range(1, args.epochs + 1):
    loss = scale * abs(args.lr - 0.3) + 1.0 / epoch
    Path(args.ckpt_dir, "ckpt.json").write_text(json.dumps({"epoch": epoch}))
    print(f"epoch={epoch} val_loss={loss:.5f}", flush=True)
    time.sleep(0.05)
'''
STUDY = """\
study: {name}
objective:
  command: python train.py --epochs 6 --ckpt-dir {{checkpoint_dir}}
metric: val_loss
mode: min
searcher: grid
{stopping}
noise: off
budget: {{max_concurrent: 2, max_steps: 6}}
parameters:
  lr: {{role: nuisance, values: {values}}}
"""


def users_folder(root: Path, name: str, values: list[float], stopping: str = "") -> Path:
    (root / "data").mkdir(parents=True)
    (root / "data" / "scale.txt").write_text("2.0")
    (root / "train.py").write_text(textwrap.dedent(TRAIN))
    (root / "study.yaml").write_text(STUDY.format(name=name, values=values, stopping=stopping))
    return root




def test_asha_stops_a_scripts_trials_and_every_stopped_script_is_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_local) -> None:
    values = [0.3, 0.05, 0.6, 0.02, 0.75, 0.01, 0.8, 0.7]  # the best first: later ones lose
    folder = users_folder(tmp_path / "project", "cmd-asha", values,
                          "early_stopping: {rule: asha, grace_period: 1, reduction_factor: 2}")
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    monkeypatch.chdir(folder)
    assert main(["run", "study.yaml", "--storage", url, "--no-preflight"]) == 0
    trials = open_store(url).get_trials("cmd-asha", measurements=True)
    states = [t.state for t in trials]
    assert states.count(TrialState.PRUNED) >= 2 and TrialState.FAILED not in states
    for t in trials:  # each epoch it printed is a step of its curve, in order
        assert [m.step for m in t.measurements] == list(range(1, (t.last_step or 0) + 1))
        assert t.measurements[0].value == pytest.approx(2.0 * abs(t.config["lr"] - 0.3) + 1.0,
                                                        abs=1e-5)
    pids = [int(p.name) for p in (folder / "pids").iterdir()]
    assert len(pids) == len(values) and not any(running(p) for p in pids)
    # each epoch's checkpoint went with its report; only the latest two of each trial are kept
    results = Path(open_store(url).get_study("cmd-asha").results_dir or "")
    kept = {t: len(list(t.glob("checkpoint_*"))) for t in results.glob("ray/run-*/trial_*")}
    assert len(kept) == len(values) and max(kept.values()) == 2, kept


def test_a_script_that_raises_shows_its_stderr_in_show_and_the_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        ray_local) -> None:
    folder = users_folder(tmp_path / "project", "cmd-fails", [0.2, 0.9])
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    monkeypatch.chdir(tmp_path)  # run from a parent folder: the script runs in its own
    study = searchsvc.run(Path("project/study.yaml"), storage=url, preflight=False)
    assert study.record.state == "completed"
    failed = [t for t in study.trials if t.state == TrialState.FAILED]
    assert [t.config["lr"] for t in failed] == [0.9]
    capsys.readouterr()
    assert main(["show", "cmd-fails", "--storage", url]) == 0
    shown = capsys.readouterr().out
    assert "FloatingPointError: loss diverged with lr=0.9" in shown
    assert 'raise FloatingPointError(f"loss diverged with lr={args.lr}")' in shown
    report = (Path(study.record.results_dir or "") / "report.md").read_text()
    assert "FloatingPointError: loss diverged with lr=0.9" in report
    assert (folder / "pids").is_dir()


PBT_SCRIPT = '''
"""The PBT toy (objectives.synthetic.pbt_toy) as a plain script: its state in a JSON file of
the folder it is given, resumed from when it is there."""
import argparse
import json
import math
import os
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--learning_rate", type=float, required=True)
parser.add_argument("--ckpt", required=True)
args = parser.parse_args()
steps = int(os.environ["SEARCHSVC_MAX_STEPS"])
saved = Path(args.ckpt) / "state.json"
state = json.loads(saved.read_text()) if saved.exists() else {"score": 0.0, "step": 0}
score = state["score"]
for step in range(state["step"] + 1, steps + 1):
    target = -1.0 - 1.5 * step / steps
    score += math.exp(-(((math.log10(args.learning_rate) - target) / 0.5) ** 2))
    saved.write_text(json.dumps({"score": score, "step": step}))
    print(json.dumps({"score": score, "learning_rate": args.learning_rate}))
'''


def test_pbt_over_a_script_continues_each_exploited_trial_from_its_parents_checkpoint(
        tmp_path: Path, ray_local) -> None:
    from tests.driver.test_searchers_on_ray import SPACES, check_population, run_text, toy_pbt

    (tmp_path / "pbt_toy.py").write_text(textwrap.dedent(PBT_SCRIPT))
    text = toy_pbt((SPACES / "toy_pbt.yaml").read_text()).replace(
        "objective: objectives.synthetic:pbt_toy",
        'objective: {command: "python pbt_toy.py --ckpt {checkpoint_dir}"}')
    store = open_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    run_text(text, store, tmp_path / "toy_pbt.yaml")
    # every step once, each exploit copying a better trial, and every step's score going on
    # from the score its trial (or, after an exploit, its parent) had: the checkpoint restored
    check_population(store, "toy_pbt")


HYDRA_APP = '''
import hydra
from omegaconf import DictConfig


@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    for epoch in range(1, cfg.epochs + 1):
        print(f"epoch={epoch} loss={abs(cfg.optim.lr - 0.1) + 1.0 / (epoch * cfg.model.width)}")


if __name__ == "__main__":
    main()
'''
HYDRA_STUDY = """\
study: hydra-app
objective:
  command: python app.py hydra.run.dir={trial_dir}/hydra
  args: hydra
metric: loss
mode: min
searcher: grid
noise: off
budget: {max_concurrent: 2, max_steps: 3}
parameters:
  optim__lr: {role: nuisance, values: [0.05, 0.2]}
  model__width: {role: scientific, values: [4, 16]}
"""


def test_a_hydra_app_takes_its_parameters_as_overrides(tmp_path: Path, ray_local) -> None:
    from tests.driver.test_searchers_on_ray import run_text

    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "config.yaml").write_text(
        "epochs: 3\noptim: {lr: 0.5}\nmodel: {width: 8}\n")
    (tmp_path / "app.py").write_text(textwrap.dedent(HYDRA_APP))
    store = open_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    run_text(HYDRA_STUDY, store, tmp_path / "hydra.yaml")
    trials = store.get_trials("hydra-app", measurements=True)
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 4
    for t in trials:  # the overrides reached the app's config: optim.lr and model.width
        lr, width = t.config["optim__lr"], t.config["model__width"]
        assert [m.value for m in t.measurements] == pytest.approx(
            [abs(lr - 0.1) + 1.0 / (epoch * width) for epoch in (1, 2, 3)])


SWEEP_PROGRAM = '''
import wandb

run = wandb.init(project="sweepdemo")
lr, epochs = wandb.config.learning_rate, wandb.config.epochs
for epoch in range(1, epochs + 1):
    loss = abs(lr - 0.01) + 1.0 / epoch + (0.05 if wandb.config.optimizer == "sgd" else 0.0)
    wandb.log({"epoch": epoch, "validation_loss": loss})
run.finish()
'''


def test_a_w_and_b_sweep_from_its_docs_imports_and_runs_offline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_local) -> None:
    import yaml

    from tests.test_importing import DOCS_SWEEP

    sweep = {**DOCS_SWEEP, "run_cap": 3}
    sweep["parameters"] = {**sweep["parameters"], "epochs": {"values": [2, 3]}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    (tmp_path / "train.py").write_text(textwrap.dedent(SWEEP_PROGRAM))
    monkeypatch.chdir(tmp_path)
    assert main(["import", "sweep.yaml"]) == 0
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert main(["run", "sweep-study.yaml", "--storage", url, "--no-preflight"]) == 0
    trials = open_store(url).get_trials("sweepdemo", measurements=True)
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 3
    for t in trials:  # wandb.config held the trial's values; each wandb.log was a step
        c = t.config
        assert [m.value for m in t.measurements] == pytest.approx(
            [abs(c["learning_rate"] - 0.01) + 1.0 / e + (0.05 if c["optimizer"] == "sgd" else 0)
             for e in range(1, c["epochs"] + 1)])
    assert list(tmp_path.glob("wandb")) == []  # W&B wrote offline runs in the trial folders


RESUMABLE = '''
"""Trains nothing real: goes on from ckpt.json in --ckpt-dir when there is one, prints
`epoch=N val_loss=X` and saves ckpt.json each epoch; every epoch it runs goes to trace/. A fresh
run with the learning rate written in ./hold stops after epoch 3 until ./hold is gone (its pid
in ./held.pid), so that the study can be killed while it is surely running."""
import argparse
import json
import os
import time
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--ckpt-dir", required=True)
args = parser.parse_args()

saved = Path(args.ckpt_dir, "ckpt.json")
start = json.loads(saved.read_text())["epoch"] + 1 if saved.exists() else 1
trace = Path("trace") / f"{os.environ['SEARCHSVC_TRIAL']}.log"
trace.parent.mkdir(exist_ok=True)
for epoch in range(start, 7):
    time.sleep(0.3)
    with trace.open("a") as f:
        f.write(f"{epoch}\\n")
    saved.write_text(json.dumps({"epoch": epoch}))
    print(f"epoch={epoch} val_loss={abs(args.lr - 0.3) + 1.0 / epoch:.5f}", flush=True)
    hold = Path("hold")
    if start == 1 and epoch == 3 and hold.exists() and float(hold.read_text()) == args.lr:
        Path("held.pid").write_text(str(os.getpid()))
        while hold.exists():
            time.sleep(0.05)
'''


def test_a_killed_script_study_resumes_each_interrupted_trial_from_its_checkpoint(
        tmp_path: Path) -> None:
    from searchsvc.core import EventKind
    from tests.killed import kill_and_resume

    (tmp_path / "train.py").write_text(textwrap.dedent(RESUMABLE))
    (tmp_path / "study.yaml").write_text(STUDY.format(
        name="resumable", values=[0.1, 0.2, 0.3, 0.4], stopping="").replace(
        " --epochs 6", ""))

    # The trial of lr 0.3 holds after its third epoch: the study is killed once that epoch's
    # checkpoint is recorded, while the trial surely has epochs to go (killed at a moment
    # chosen by the clock, a trial could report its last epoch in between and end complete).
    (tmp_path / "hold").write_text("0.3")

    def held_after_a_checkpoint(store: Any) -> bool:
        trials = store.get_trials("resumable")
        saved = {(e.number, e.step, e.data.get("attempt"))
                 for e in store.get_events("resumable", kind=EventKind.CHECKPOINT)}
        return sum(t.state == TrialState.COMPLETED for t in trials) >= 1 and any(
            t.state == TrialState.RUNNING and t.config["lr"] == 0.3
            and (t.number, 3, t.attempts) in saved for t in trials)

    def release() -> None:
        # The killed worker's script, left waiting: gone as with its machine, not to go on.
        os.kill(int((tmp_path / "held.pid").read_text()), signal.SIGKILL)
        (tmp_path / "hold").unlink()

    store, _ = kill_and_resume(tmp_path, "resumable", until=held_after_a_checkpoint,
                               between=release)
    assert store.get_study("resumable").state == "completed"
    saved: dict[int, int] = {}
    for event in store.get_events("resumable", kind=EventKind.CHECKPOINT):
        if event.data["attempt"] == 1:
            saved[event.number] = max(saved.get(event.number, 0), event.step or 0)
    trials = store.get_trials("resumable", measurements=True)
    interrupted = [t for t in trials if t.attempts == 2]
    assert [saved.get(t.number) for t in interrupted if t.config["lr"] == 0.3] == [3]
    for trial in trials:
        lr = trial.config["lr"]
        assert [(m.step, m.value) for m in trial.measurements if m.attempt == trial.attempts
                ] == [(e, pytest.approx(abs(lr - 0.3) + 1.0 / e, abs=1e-5)) for e in range(1, 7)]
    for trial in interrupted:  # the script went on from the epoch after its checkpoint
        ran = [int(x) for x in (tmp_path / "trace" / f"{trial.number}.log").read_text().split()]
        restored, lost = saved.get(trial.number, 0), len(ran) - 6
        assert lost >= 0 and ran == [*range(1, restored + lost + 1), *range(restored + 1, 7)]
