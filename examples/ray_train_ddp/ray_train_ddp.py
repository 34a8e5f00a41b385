"""A Ray Train training function written the way Ray Train's documentation writes one:
``prepare_model``, ``prepare_data_loader``, ``ray.train.report`` with a checkpoint from rank 0,
``ray.train.get_context()`` for the rank, and ``ray.train.get_checkpoint()`` to resume.

searchsvc runs it unchanged as a data-parallel trial (``resources: {workers: 2}``): see
examples/ray_train_ddp/study.yaml. It trains a small MLP on scikit-learn's bundled digits (no
download); each worker trains on its shard of the training split.
"""

import os
import tempfile

import ray.train
import ray.train.torch
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def datasets():
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    y = torch.tensor(y)
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.2, random_state=0)
    return TensorDataset(x_train, y_train), TensorDataset(x_val, y_val)


def train_func(config):
    train_set, val_set = datasets()
    model = nn.Sequential(nn.Linear(64, config["hidden"]), nn.ReLU(),
                          nn.Linear(config["hidden"], 10))
    model = ray.train.torch.prepare_model(model)
    # prepare_data_loader adds a DistributedSampler: each worker sees its shard of the data.
    train_loader = ray.train.torch.prepare_data_loader(
        DataLoader(train_set, batch_size=32, shuffle=True))
    val_loader = DataLoader(val_set, batch_size=256)
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    start = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            state = torch.load(os.path.join(folder, "model.pt"))
            model.module.load_state_dict(state["model"]) if hasattr(model, "module") \
                else model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            start = state["epoch"] + 1

    rank = ray.train.get_context().get_world_rank()
    for epoch in range(start, config.get("epochs", 5)):
        if ray.train.get_context().get_world_size() > 1:
            train_loader.sampler.set_epoch(epoch)
        model.train()
        seen = 0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            seen += len(y)
        model.eval()
        wrong = total = 0
        with torch.no_grad():
            for x, y in val_loader:
                wrong += (model(x).argmax(1) != y).sum().item()
                total += len(y)
        metrics = {"val_error": wrong / total, "train_samples": seen, "epoch": epoch}
        with tempfile.TemporaryDirectory() as folder:
            checkpoint = None
            if rank == 0:
                inner = model.module if hasattr(model, "module") else model
                torch.save({"model": inner.state_dict(), "optimizer": optimizer.state_dict(),
                            "epoch": epoch}, os.path.join(folder, "model.pt"))
                checkpoint = ray.train.Checkpoint.from_directory(folder)
            ray.train.report(metrics, checkpoint=checkpoint)
