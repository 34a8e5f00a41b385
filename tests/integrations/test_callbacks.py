"""The framework callbacks without Ray (sdk.run_locally, as one trial runs): what each reports
and when, and the seed it hands the framework."""

from __future__ import annotations

import os

import pytest

from searchsvc.worker.sdk import run_locally

pytestmark = pytest.mark.slow


def linear_module() -> type:
    """A LightningModule class: one linear layer trained by SGD on (x, y) batches."""
    import pytorch_lightning as pl
    import torch
    from torch import nn

    class Linear(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Linear(4, 1)

        def training_step(self, batch, _):
            x, y = batch
            return nn.functional.mse_loss(self.net(x).squeeze(1), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Linear


def test_lightning_reports_each_validation_but_the_sanity_check_and_seeds_lightning() -> None:
    import pytorch_lightning as pl
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from searchsvc.integrations.lightning import SearchsvcCallback

    class Model(linear_module()):
        def validation_step(self, batch, _):
            x, y = batch
            self.log("val_loss", nn.functional.mse_loss(self.net(x).squeeze(1), y))
            self.log("seeded", float(os.environ.get("PL_GLOBAL_SEED", "-1")))
            self.log("name", 1.0)

    def objective(config: dict) -> None:
        data = TensorDataset(torch.randn(32, 4), torch.randn(32))
        trainer = pl.Trainer(max_epochs=3, callbacks=[SearchsvcCallback(["val_loss", "seeded"])],
                             accelerator="cpu", logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False)
        trainer.fit(Model(), DataLoader(data, batch_size=8), DataLoader(data, batch_size=32))

    os.environ.pop("PL_GLOBAL_SEED", None)
    reports = run_locally(objective, {}, metric="val_loss", seed=1234)
    assert [r["epoch"] for r in reports] == [1, 2, 3]  # the sanity check's validation is not one
    assert all(set(r) == {"val_loss", "seeded", "epoch"} for r in reports)  # only those named
    assert all(r["seeded"] == 1234 for r in reports)


def test_lightning_tells_the_trials_telemetry_how_long_each_batch_was_waited_for() -> None:
    import time

    import pytorch_lightning as pl
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from searchsvc.integrations.lightning import SearchsvcCallback
    from searchsvc.worker.context import TrialContext, set_current
    from searchsvc.worker.telemetry import Telemetry

    class Slow(TensorDataset):
        def __getitem__(self, i):  # a slow input pipeline: 20 ms an example
            time.sleep(0.02)
            return super().__getitem__(i)

    Model = linear_module()

    telemetry = Telemetry(gpu_ids=[])
    set_current(TrialContext(reporter=lambda metrics: None, telemetry=telemetry))
    try:
        trainer = pl.Trainer(max_epochs=1, callbacks=[SearchsvcCallback()], accelerator="cpu",
                             logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False)
        trainer.fit(Model(), DataLoader(Slow(torch.randn(10, 4), torch.randn(10)),
                                        batch_size=2))
    finally:
        set_current(None)
    assert telemetry.loader_used and telemetry.loader_workers == 0
    assert telemetry.waited_s >= 10 * 0.02  # every example's 20 ms was waited for
    assert telemetry.first_batch_s is not None


def test_xgboost_and_lightgbm_report_every_evaluation_set_each_round() -> None:
    import lightgbm as lgb
    import numpy as np
    import xgboost as xgb

    from searchsvc.integrations.lightgbm import searchsvc_callback
    from searchsvc.integrations.xgboost import SearchsvcCallback

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(200, 5)), rng.integers(0, 2, 200)

    def boosted(config: dict) -> None:
        train, valid = xgb.DMatrix(x[:150], label=y[:150]), xgb.DMatrix(x[150:], label=y[150:])
        xgb.train({"objective": "binary:logistic", "eval_metric": ["logloss", "error"],
                   "nthread": 1}, train, num_boost_round=4,
                  evals=[(train, "train"), (valid, "validation")], verbose_eval=False,
                  callbacks=[SearchsvcCallback()])

    reports = run_locally(boosted, {}, metric="validation-logloss")
    assert [r["round"] for r in reports] == [1, 2, 3, 4]
    assert set(reports[0]) == {"train-logloss", "train-error", "validation-logloss",
                               "validation-error", "round"}
    assert reports[-1]["train-logloss"] < reports[0]["train-logloss"]

    def leaves(config: dict) -> None:
        train = lgb.Dataset(x[:150], label=y[:150])
        lgb.train({"objective": "binary", "metric": "binary_logloss", "verbose": -1,
                   "num_threads": 1}, train, num_boost_round=3,
                  valid_sets=[lgb.Dataset(x[150:], label=y[150:], reference=train)],
                  valid_names=["validation"], callbacks=[searchsvc_callback()])

    reports = run_locally(leaves, {}, metric="validation-binary_logloss")
    assert [r["round"] for r in reports] == [1, 2, 3]
    assert all(set(r) == {"validation-binary_logloss", "round"} for r in reports)
