"""PBT over a Lightning, a Keras ``fit`` and a Hugging Face ``Trainer`` objective: a trial that
exploits another continues from that trial's checkpoint, restored by the framework through
searchsvc.integrations.

Each objective reports, every epoch, a fingerprint of its weights when the epoch started and
when it ended, and the learning rate its optimizer used. After an exploit at step s, the
trial's next report is epoch s + 1 (the framework restored the epoch count, not starting again
at 1), its weights at the start of that epoch are the parent's at the end of epoch s (the
framework restored the weights), and its optimizer uses the learning rate PBT explored (not
the parent's, which a restored optimizer would otherwise bring along)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from searchsvc.core import EventKind, TrialRecord
from searchsvc.store import SqlStore
from tests.driver.studies import run_in

pytestmark = pytest.mark.slow

# A CPU a trial fills the tests' 2-CPU Ray: Tune then starts no spare worker (a fresh import of
# torch or TensorFlow) for a trial it unpauses while another trial's worker is about to free.
STUDY = """
study: {name}
objective: train:train
metric: {metric}
mode: min
searcher: pbt
searcher_options: {{perturbation_interval: 1, quantile_fraction: 0.5, synch: true}}
budget: {{trials: 2, max_concurrent: 2, max_steps: 4}}
resources: {{cpu: 1}}
seed: 0
parameters:
  lr: {{role: nuisance, low: 1.0e-4, high: 0.3, scale: log}}
"""

LIGHTNING = """
from searchsvc.integrations.lightning import resume_checkpoint
from tests.integrations.linear import Linear, loaders, trainer


class Model(Linear):
    def on_train_epoch_start(self):
        self.start = self.fingerprint()

    def on_validation_epoch_end(self):
        self.log("w_start", self.start)
        self.log("w_end", self.fingerprint())
        self.log("lr_used", self.trainer.optimizers[0].param_groups[0]["lr"])


def train(config):
    trainer().fit(Model(config["lr"]), *loaders(), ckpt_path=resume_checkpoint())
"""

KERAS = """
import keras
import numpy as np

from searchsvc import sdk
from searchsvc.integrations.keras import SearchsvcCallback, resume


def fingerprint(model):
    return float(sum(np.sum(w) for w in model.get_weights()))


class Fingerprint(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.start = fingerprint(self.model)

    def on_epoch_end(self, epoch, logs=None):
        logs["w_start"], logs["w_end"] = self.start, fingerprint(self.model)
        logs["lr_used"] = float(self.model.optimizer.learning_rate)


def train(config):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 8)).astype("float32")
    y = x @ np.linspace(-1, 1, 8).astype("float32")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=config["lr"]), loss="mse")
    initial_epoch = resume(model)
    model.fit(x[:192], y[:192], validation_data=(x[192:], y[192:]), batch_size=64,
              epochs=sdk.max_steps(4), initial_epoch=initial_epoch, verbose=0,
              callbacks=[Fingerprint(), SearchsvcCallback()])
"""


HUGGINGFACE = """
import torch
from torch import nn
from transformers import Trainer, TrainerCallback, TrainingArguments

from searchsvc import sdk
from searchsvc.integrations.huggingface import SearchsvcCallback, resume_checkpoint


class Linear(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 1)

    def forward(self, x, labels=None):
        out = self.net(x).squeeze(1)
        return {"loss": nn.functional.mse_loss(out, labels), "logits": out}


class Data(torch.utils.data.Dataset):
    def __init__(self):
        self.x = torch.randn(256, 8, generator=torch.Generator().manual_seed(0))
        self.y = self.x @ torch.linspace(-1, 1, 8)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


def fingerprint(model):
    return float(sum(p.detach().sum() for p in model.parameters()))


class Fingerprint(TrainerCallback):
    def on_epoch_begin(self, args, state, control, model=None, **kwargs):
        self.start = fingerprint(model)

    def on_evaluate(self, args, state, control, metrics=None, model=None, optimizer=None,
                    **kwargs):
        metrics["w_start"], metrics["w_end"] = self.start, fingerprint(model)
        metrics["lr_used"] = optimizer.param_groups[0]["lr"]


def train(config):
    args = TrainingArguments(
        output_dir=str(sdk.trial_dir() / "hf"), eval_strategy="epoch", save_strategy="epoch",
        num_train_epochs=sdk.max_steps(4), learning_rate=config["lr"], optim="sgd",
        lr_scheduler_type="constant", per_device_train_batch_size=64, report_to=[],
        save_total_limit=1, logging_strategy="no", disable_tqdm=True,
        seed=sdk.trial_context().seed)
    trainer = Trainer(model=Linear(), args=args, train_dataset=Data(), eval_dataset=Data(),
                      callbacks=[Fingerprint(), SearchsvcCallback()])
    trainer.train(resume_from_checkpoint=resume_checkpoint())
"""

SOURCES = {"lightning": LIGHTNING, "keras": KERAS, "huggingface": HUGGINGFACE}


def value(trial: TrialRecord, step: int, key: str) -> float:
    return next(m.metrics[key] for m in trial.measurements if m.step == step)


@pytest.mark.parametrize("framework", sorted(SOURCES))
def test_an_exploiting_trial_continues_from_its_parents_epoch_and_weights(
        ray_local, tmp_path: Path, framework: str) -> None:
    name = f"pbt-{framework}"
    source = SOURCES[framework]
    metric = "eval_loss" if framework == "huggingface" else "val_loss"
    outcome, store = run_in(tmp_path, STUDY.format(name=name, metric=metric),
                            train=textwrap.dedent(source))
    assert isinstance(store, SqlStore) and outcome.study.state == "completed"
    trials = {t.number: t for t in store.get_trials(name, measurements=True)}
    exploits = store.get_events(name, kind=EventKind.EXPLOIT)
    assert exploits  # synchronous PBT with half the population exploiting, every epoch
    for trial in trials.values():
        # every epoch reported once, numbered by the framework's own count
        assert [m.metrics["epoch"] for m in trial.measurements] == pytest.approx(
            [m.step for m in trial.measurements])
        assert [m.step for m in trial.measurements] == [1, 2, 3, 4]
    differed = 0
    for event in exploits:
        step, parent = event.step, trials[event.data["parent"]]
        assert step is not None and step < 4 and event.data["parent_step"] == step
        trial = trials[event.number]
        assert value(trial, step + 1, "epoch") == step + 1
        assert value(trial, step + 1, "w_start") == pytest.approx(
            value(parent, step, "w_end"), rel=1e-6, abs=1e-6)
        assert value(trial, step + 1, "lr_used") == pytest.approx(
            event.data["new_config"]["lr"], rel=1e-6)
        differed += value(trial, step, "w_end") != pytest.approx(value(parent, step, "w_end"))
    # not by chance: some exploiting trial's own weights were not its parent's already
    assert differed
