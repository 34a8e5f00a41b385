"""A PyTorch MLP or CNN on scikit-learn's bundled 8x8 digits (no download), for real tuning
studies and architecture search.

Config (all optional but ``learning_rate``): model (mlp|cnn), conv_layers and channels_<i>
(cnn: 3x3 convolutions, the last followed by 2x2 max pooling), num_layers with units_<i> or
hidden_units (the dense layers), activation (relu|tanh|gelu), dropout, optimizer (adam|sgd),
momentum, weight_decay, batch_size, watch (true: sdk.watch measures the layers'
dimensionality on 256 fixed validation images). Layer indices start at 0.
Reports train_loss, val_loss and val_error every epoch for ``budget.max_steps`` epochs, checkpoints
through searchsvc's helper when the study keeps checkpoints, and resumes from one.
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from objectives.digits_data import standardised_split
from searchsvc import sdk

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}


@functools.lru_cache(maxsize=1)
def load_data() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The digits split as tensors; loaded once per worker process."""
    x_train, y_train, x_val, y_val = standardised_split()
    return (torch.from_numpy(x_train), torch.from_numpy(y_train).long(),
            torch.from_numpy(x_val), torch.from_numpy(y_val).long())


def build_model(config: dict, n_in: int = 64, n_out: int = 10) -> nn.Module:
    layers: list[nn.Module] = []
    width = n_in
    activation = _ACTIVATIONS[config.get("activation", "relu")]
    if config.get("model", "mlp") == "cnn":
        channels = 1
        layers.append(nn.Unflatten(1, (1, 8, 8)))
        for i in range(int(config.get("conv_layers", 1))):
            out = int(config.get(f"channels_{i}", 16))
            layers += [nn.Conv2d(channels, out, 3, padding=1), activation()]
            channels = out
        layers += [nn.MaxPool2d(2), nn.Flatten()]
        width = channels * 16
    for i in range(int(config.get("num_layers", 2))):
        units = int(config.get(f"units_{i}", config.get("hidden_units", 64)))
        layers += [nn.Linear(width, units), activation()]
        if config.get("dropout", 0.0):
            layers.append(nn.Dropout(float(config["dropout"])))
        width = units
    layers.append(nn.Linear(width, n_out))
    return nn.Sequential(*layers)


def make_optimizer(config: dict, params: object) -> torch.optim.Optimizer:
    lr, wd = float(config["learning_rate"]), float(config.get("weight_decay", 0.0))
    if config.get("optimizer", "adam") == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=float(config.get("momentum", 0.9)),
                               weight_decay=wd)
    return torch.optim.Adam(params, lr=lr, weight_decay=wd)


def train(config: dict) -> None:
    sdk.seed_everything()
    device = sdk.device()
    on_gpu = device.type == "cuda"
    # Pinned host memory makes the one copy to the GPU asynchronous; the data then stays there.
    x_train, y_train, x_val, y_val = (
        (t.pin_memory() if on_gpu else t).to(device, non_blocking=True) for t in load_data())
    model = build_model(config).to(device)
    if config.get("watch"):  # the layers' dimensionality, on 256 fixed validation images
        sdk.watch(model, probe=x_val[:256])
    optimizer = make_optimizer(config, model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    # Mixed precision on a GPU (float16 matmuls, loss scaling against underflow); off on CPU.
    autocast = functools.partial(torch.autocast, device_type=device.type,
                                 dtype=torch.float16, enabled=on_gpu)
    scaler = torch.amp.GradScaler(device.type, enabled=on_gpu)
    batch_size = int(config.get("batch_size", 64))
    sdk.preflight_checks(  # a no-op in a trial; preflight's overfit and ln(10) checks
        overfit_step=_overfit_step(config, x_train[:batch_size], y_train[:batch_size]),
        num_classes=10)
    start = 1
    state = sdk.restore()
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        # The checkpoint may come from another trial (PBT): train on with *this* config's
        # hyperparameters, not the ones saved in the optimizer state.
        for group in optimizer.param_groups:
            group["lr"] = float(config["learning_rate"])
            group["weight_decay"] = float(config.get("weight_decay", 0.0))
        start = int(state["epoch"]) + 1
    generator = torch.Generator().manual_seed(sdk.trial_context().seed)
    for epoch in range(start, sdk.max_steps(20) + 1):
        model.train()
        total, count = 0.0, 0
        for idx in torch.randperm(len(x_train), generator=generator).split(batch_size):
            idx = idx.to(device)
            optimizer.zero_grad()
            with autocast():
                loss = loss_fn(model(x_train[idx]), y_train[idx])
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            total += loss.item() * len(idx)
            count += len(idx)
        model.eval()
        with torch.no_grad(), autocast():
            logits = model(x_val).float()
            val_loss = float(loss_fn(logits, y_val))
            val_error = float((logits.argmax(1) != y_val).float().mean())
        sdk.report(
            {"train_loss": total / count, "val_loss": val_loss, "val_error": val_error,
             "epoch": epoch},
            state=lambda epoch=epoch: {"model": model.state_dict(),
                                       "optimizer": optimizer.state_dict(), "epoch": epoch},
        )


def _overfit_step(config: dict, x: torch.Tensor, y: torch.Tensor):  # -> Callable[[], float]
    """One optimisation step on the fixed batch (x, y), with a model of its own (the trial's own
    model is untouched) and Adam at 1e-2, returning the batch's loss before the step: the check
    is whether this architecture and loss can fit one batch, not whether the searched learning
    rate is good (the centre of a wide range may well be slow)."""
    model = build_model(config).to(x.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()

    def step() -> float:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step
