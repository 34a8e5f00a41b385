"""A PyTorch Lightning classifier of scikit-learn's bundled digits, tuned by searchsvc.

The three lines that matter: the callback in the Trainer, the step budget as max_epochs, and
``ckpt_path=resume_checkpoint()`` so that PBT, retries and resumed studies continue from the
trial's checkpoint. Run it alone with ``python train.py`` (no searchsvc needed then).
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from searchsvc import sdk
from searchsvc.integrations.lightning import SearchsvcCallback, resume_checkpoint


class Digits(pl.LightningModule):
    def __init__(self, lr: float, width: int):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, 10))

    def training_step(self, batch, _):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, _):
        x, y = batch
        logits = self.net(x)
        self.log("val_loss", nn.functional.cross_entropy(logits, y))
        self.log("val_accuracy", (logits.argmax(1) == y).float().mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)


def loaders(batch_size: int = 64) -> tuple[DataLoader, DataLoader]:
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    y = torch.tensor(y)
    split = 1400
    train = TensorDataset(x[:split], y[:split])
    val = TensorDataset(x[split:], y[split:])
    return (DataLoader(train, batch_size=batch_size, shuffle=True),
            DataLoader(val, batch_size=512))


def train(config: dict) -> None:
    train_data, val_data = loaders()
    model = Digits(lr=config["lr"], width=config["width"])
    trainer = pl.Trainer(max_epochs=sdk.max_steps(5), callbacks=[SearchsvcCallback()],
                         accelerator="auto", devices=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)
    trainer.fit(model, train_data, val_data, ckpt_path=resume_checkpoint())


if __name__ == "__main__":
    print(sdk.run_locally(train, {"lr": 0.05, "width": 32}, metric="val_loss", max_steps=3))
