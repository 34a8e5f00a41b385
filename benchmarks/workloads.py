"""The objectives the orchestration benchmarks run, each in two forms: a plain Ray Tune
function trainable (what searchsvc and stock Ray Tune both run, unchanged) and a function of a
``report`` callback (what Optuna runs in-process). Every report carries ``compute_s``: the
seconds the objective has spent computing so far, excluding the time it was blocked inside
``report`` (waiting for the orchestrator is overhead, not work).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

Report = Callable[[dict[str, Any]], None]

TRIVIAL_STEPS = 5
DIGITS_EPOCHS = 2


def trivial_steps(config: dict[str, Any], report: Report) -> None:
    """Returns at once after TRIVIAL_STEPS reports of a value computed from ``x``."""
    compute, started = 0.0, time.perf_counter()
    x = float(config["x"])
    for step in range(1, TRIVIAL_STEPS + 1):
        score = (x - 0.5) ** 2 + 1.0 / step
        compute += time.perf_counter() - started
        report({"score": score, "compute_s": compute})
        started = time.perf_counter()


def digits_steps(config: dict[str, Any], report: Report) -> None:
    """The digits MLP (objectives.torch_digits) trained for DIGITS_EPOCHS epochs on one thread,
    reporting val_error each epoch."""
    import torch
    from torch import nn

    from objectives.torch_digits import build_model, load_data, make_optimizer

    compute, started = 0.0, time.perf_counter()
    torch.set_num_threads(1)  # one CPU per trial, the same for every orchestrator
    torch.manual_seed(0)
    x_train, y_train, x_val, y_val = load_data()
    model = build_model({"num_layers": 2, "hidden_units": 64})
    optimizer = make_optimizer({**config, "optimizer": "sgd", "momentum": 0.9},
                               model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, DIGITS_EPOCHS + 1):
        model.train()
        for idx in torch.randperm(len(x_train)).split(64):
            optimizer.zero_grad()
            loss_fn(model(x_train[idx]), y_train[idx]).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_error = float((model(x_val).argmax(1) != y_val).float().mean())
        compute += time.perf_counter() - started
        report({"val_error": val_error, "compute_s": compute, "epoch": epoch})
        started = time.perf_counter()


def _tune_report(metrics: dict[str, Any]) -> None:
    from ray import tune

    tune.report(metrics)


def trivial(config: dict[str, Any]) -> None:
    """Ray Tune function trainable form of :func:`trivial_steps`."""
    trivial_steps(config, _tune_report)


def digits(config: dict[str, Any]) -> None:
    """Ray Tune function trainable form of :func:`digits_steps`."""
    digits_steps(config, _tune_report)
