"""A linear regression in PyTorch Lightning, small enough for trials of a few seconds: what
the Lightning tests' objectives build on (imported by the trial's worker, as
``tests.integrations.linear``)."""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from searchsvc import sdk
from searchsvc.integrations.lightning import SearchsvcCallback


def loaders(**train_options: Any) -> tuple[DataLoader, DataLoader]:
    """(training, validation) loaders of 256 fixed examples of y = x . w."""
    x = torch.randn(256, 8, generator=torch.Generator().manual_seed(0))
    data = TensorDataset(x, x @ torch.linspace(-1, 1, 8))
    return DataLoader(data, batch_size=64, **train_options), DataLoader(data, batch_size=256)


class Linear(pl.LightningModule):
    """y = w . x + b by SGD, logging ``val_loss``."""

    def __init__(self, lr: float, momentum: float = 0.0):
        super().__init__()
        self.lr, self.momentum = lr, momentum
        self.net = nn.Linear(8, 1)

    def fingerprint(self) -> float:
        """One number that changes with every weight."""
        return float(self.net.weight.sum() + self.net.bias.sum())

    def training_step(self, batch: Any, _: int) -> Any:
        x, y = batch
        return nn.functional.mse_loss(self.net(x).squeeze(1), y)

    def validation_step(self, batch: Any, _: int) -> None:
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x).squeeze(1), y))

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=self.momentum)


def trainer() -> pl.Trainer:
    """A quiet CPU Trainer with searchsvc's callback, for the study's max_steps epochs."""
    return pl.Trainer(max_epochs=sdk.max_steps(4), callbacks=[SearchsvcCallback()],
                      accelerator="cpu", devices=1, logger=False, num_sanity_val_steps=0,
                      enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False)
