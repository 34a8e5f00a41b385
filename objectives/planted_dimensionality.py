"""Networks with a planted representation dimensionality, on scikit-learn's bundled digits,
whose ground truth the dimensionality report must recover.

- :func:`bottleneck`: a digits MLP whose first layer ``enc`` has ``width`` units (1: a
  one-unit bottleneck, which can only ever show one dimension). Narrower bottlenecks learn worse,
  so early dimensionality and the result go together. Watched on a fixed probe batch through
  :func:`searchsvc.sdk.watch`; reports ``loss`` (training) and ``val_error`` with ``sdk.report``.
- :func:`collapsing`: a Ray-native objective (``ray.tune.report``, as Ray's docs write one)
  whose MLP is watched on the training batch. At step ``kill_at`` (0: never) every hidden ReLU
  but one is killed (its bias set far below zero), so the layer after them can show one dimension
  from then on while the training loss keeps falling. Its study metric ``score`` is drawn from
  the trial's seed alone: independent of the network, so early dimensionality cannot predict it.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from torch import nn

from objectives.torch_digits import load_data
from searchsvc import sdk

PROBE = 256  # validation examples in the fixed probe batch


def train_epoch(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor,
                y: torch.Tensor, batch: int, generator: torch.Generator) -> float:
    """One epoch of shuffled minibatches of ``batch`` examples; the mean training loss."""
    model.train()
    order = torch.randperm(len(x), generator=generator)
    total = 0.0
    for start in range(0, len(x), batch):
        index = order[start:start + batch]
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[index]), y[index])
        loss.backward()
        optimizer.step()
        total += loss.item() * len(index)
    return total / len(x)


def bottleneck(config: dict) -> None:
    sdk.seed_everything()
    x_train, y_train, x_val, y_val = load_data()
    width = int(config["width"])
    model = nn.Sequential()
    model.add_module("enc", nn.Linear(64, width))
    model.add_module("act", nn.ReLU())
    model.add_module("hidden", nn.Linear(width, 32))
    model.add_module("act2", nn.ReLU())
    model.add_module("head", nn.Linear(32, 10))
    sdk.watch(model, probe=x_val[:PROBE])
    optimizer = torch.optim.Adam(model.parameters(), lr=float(config.get("learning_rate", 0.01)))
    generator = torch.Generator().manual_seed(sdk.trial_context().seed)
    for _ in range(sdk.max_steps(8)):
        loss = train_epoch(model, optimizer, x_train, y_train, 64, generator)
        model.eval()
        with torch.no_grad():
            error = float((model(x_val).argmax(1) != y_val).float().mean())
        sdk.report({"loss": loss, "val_error": error})


def collapsing(config: dict) -> None:
    from ray import tune

    sdk.seed_everything()
    x_train, y_train, _, _ = load_data()
    model = nn.Sequential()
    model.add_module("fc1", nn.Linear(64, int(config["width"])))
    model.add_module("act", nn.ReLU())
    model.add_module("fc2", nn.Linear(int(config["width"]), 64))
    model.add_module("act2", nn.ReLU())
    model.add_module("head", nn.Linear(64, 10))
    sdk.watch(model, every=int(config.get("every", 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    generator = torch.Generator().manual_seed(sdk.trial_context().seed)
    score = float(np.random.default_rng(sdk.trial_context().seed + 12345).normal())
    kill_at = int(config.get("kill_at", 0))
    for step in range(1, sdk.max_steps(8) + 1):
        if step == kill_at:
            with torch.no_grad():
                model.fc1.bias[1:] = -1e4  # every hidden unit but the first never fires again
        loss = train_epoch(model, optimizer, x_train, y_train, 128, generator)
        time.sleep(float(config.get("sleep", 0.0)))
        tune.report({"loss": loss, "score": score})
