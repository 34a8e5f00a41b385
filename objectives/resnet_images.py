"""A ResNet-style image classifier on a procedurally generated image dataset: the realistic
GPU objective (an input pipeline, a model that fills a GPU, mixed precision), downloading
nothing.

Data: ``dataset_size`` RGB images of ``image_size`` x ``image_size`` (default 50,000 of
32 x 32, CIFAR-sized) in ``num_classes`` classes (default 10). Each class is a few coloured
sinusoidal gratings with its own frequencies, orientations and colours; every image draws its
class's pattern with a random phase, shift, contrast and Gaussian noise, so the classes are
learnable but not trivially (a linear model does poorly, a small CNN well). Image ``i`` is a
pure function of (``data_seed``, ``i``): built on the fly in the DataLoader's workers, as a
decoded and augmented real dataset would be, with no file on disk. The validation set is the
next ``dataset_size // 10`` indices.

Model: a stem convolution, then 3 stages of ``depth`` basic residual blocks with ``width``,
2x``width`` and 4x``width`` channels (stride 2 between stages), global pooling and a linear
head.

Config: learning_rate (required), weight_decay, momentum, label_smoothing, batch_size, width,
depth, amp (bf16 autocast where supported: CUDA with bf16, else off), channels_last,
compile (torch.compile), workers (DataLoader workers), steps_per_epoch (batches per reported
step; default a whole epoch), dataset_size, image_size, num_classes, data_seed.
Reports train_loss, val_loss and val_error (and the samples trained, for throughput) every
epoch for ``budget.max_steps`` epochs; uses searchsvc's data-loader wrapper (input wait time)
and offers the preflight's overfit-one-batch check.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

from searchsvc import sdk

PATTERNS_PER_CLASS = 3


class GratingImages(Dataset):
    """Images ``offset`` .. ``offset + size - 1`` of the generated dataset (see the module
    docstring); each is a (3, image_size, image_size) float tensor and its class."""

    def __init__(self, size: int, image_size: int = 32, num_classes: int = 10,
                 data_seed: int = 0, offset: int = 0):
        self.size, self.image_size, self.num_classes = size, image_size, num_classes
        self.data_seed, self.offset = data_seed, offset
        g = torch.Generator().manual_seed(data_seed)
        # Per class: frequencies (cycles per image), orientations and RGB colours of its gratings.
        self.freq = 1.0 + 4.0 * torch.rand(num_classes, PATTERNS_PER_CLASS, generator=g)
        self.angle = math.pi * torch.rand(num_classes, PATTERNS_PER_CLASS, generator=g)
        self.colour = torch.rand(num_classes, PATTERNS_PER_CLASS, 3, generator=g) * 2 - 1
        axis = torch.linspace(0, 1, image_size)
        self.yy, self.xx = torch.meshgrid(axis, axis, indexing="ij")

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if not 0 <= index < self.size:
            raise IndexError(index)
        number = self.offset + index
        g = torch.Generator().manual_seed(self.data_seed * 1_000_003 + number)
        label = int(torch.randint(self.num_classes, (1,), generator=g))
        image = torch.zeros(3, self.image_size, self.image_size)
        shift = torch.rand(2, generator=g) * 0.3
        for k in range(PATTERNS_PER_CLASS):
            angle = self.angle[label, k] + 0.3 * (torch.rand(1, generator=g) - 0.5)
            along = ((self.xx + shift[0]) * torch.cos(angle)
                     + (self.yy + shift[1]) * torch.sin(angle))
            phase = 2 * math.pi * torch.rand(1, generator=g)
            wave = torch.sin(2 * math.pi * self.freq[label, k] * along + phase)
            image += self.colour[label, k].view(3, 1, 1) * wave
        contrast = 0.5 + torch.rand(1, generator=g)
        image = contrast * image / PATTERNS_PER_CLASS
        image += 0.6 * torch.randn(image.shape, generator=g)
        return image, label


class BasicBlock(nn.Module):
    def __init__(self, channels_in: int, channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or channels_in != channels:
            self.shortcut = nn.Sequential(nn.Conv2d(channels_in, channels, 1, stride, bias=False),
                                          nn.BatchNorm2d(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


def build_model(width: int = 32, depth: int = 2, num_classes: int = 10) -> nn.Module:
    """The ResNet: 3 stages of ``depth`` blocks, ``width`` x (1, 2, 4) channels."""
    layers: list[nn.Module] = [nn.Conv2d(3, width, 3, 1, 1, bias=False),
                               nn.BatchNorm2d(width), nn.ReLU()]
    channels = width
    for stage, multiple in enumerate((1, 2, 4)):
        for block in range(depth):
            stride = 2 if stage > 0 and block == 0 else 1
            layers.append(BasicBlock(channels, width * multiple, stride))
            channels = width * multiple
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, num_classes)]
    return nn.Sequential(*layers)


def _amp_dtype(device: torch.device, wanted: bool) -> torch.dtype | None:
    """bf16 autocast where the device supports it (no loss scaling needed), else None."""
    if not wanted or device.type != "cuda" or not torch.cuda.is_bf16_supported():
        return None
    return torch.bfloat16


def train(config: dict[str, Any]) -> None:
    sdk.seed_everything()
    device = sdk.device()
    on_gpu = device.type == "cuda"
    size = int(config.get("dataset_size", 50_000))
    image_size = int(config.get("image_size", 32))
    num_classes = int(config.get("num_classes", 10))
    data_seed = int(config.get("data_seed", 0))
    batch_size = int(config.get("batch_size", 128))
    workers = int(config.get("workers", 4))
    train_set = GratingImages(size, image_size, num_classes, data_seed)
    val_set = GratingImages(max(size // 10, batch_size), image_size, num_classes, data_seed,
                            offset=size)
    loader_options: dict[str, Any] = dict(
        batch_size=batch_size, num_workers=workers, pin_memory=on_gpu,
        persistent_workers=workers > 0, drop_last=True)
    if workers > 0:
        loader_options["prefetch_factor"] = 4
    train_loader = DataLoader(train_set, shuffle=True, **loader_options)
    val_loader = DataLoader(val_set, shuffle=False, **{**loader_options, "drop_last": False})

    memory_format = (torch.channels_last if config.get("channels_last", True)
                     else torch.contiguous_format)
    model = build_model(int(config.get("width", 32)), int(config.get("depth", 2)),
                        num_classes).to(device, memory_format=memory_format)
    step_model: Any = torch.compile(model) if config.get("compile", False) else model
    optimizer = torch.optim.SGD(model.parameters(), lr=float(config["learning_rate"]),
                                momentum=float(config.get("momentum", 0.9)), nesterov=True,
                                weight_decay=float(config.get("weight_decay", 5e-4)))
    loss_fn = nn.CrossEntropyLoss(label_smoothing=float(config.get("label_smoothing", 0.0)))
    amp = _amp_dtype(device, bool(config.get("amp", True)))
    epochs = sdk.max_steps(10)
    steps_per_epoch = int(config.get("steps_per_epoch") or len(train_loader))

    def to_device(images: torch.Tensor, labels: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        return (images.to(device, non_blocking=True, memory_format=memory_format),
                labels.to(device, non_blocking=True))

    def train_step(images: torch.Tensor, labels: torch.Tensor) -> float:
        with torch.autocast(device.type, dtype=amp or torch.float32, enabled=amp is not None):
            loss = loss_fn(step_model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    # Preflight only: can the model drive the loss down on one fixed batch? (a no-op otherwise)
    fixed = to_device(*next(iter(DataLoader(train_set, batch_size=min(batch_size, 64)))))
    # Before the schedule, which starts from a 25th of the learning rate.
    sdk.preflight_checks(overfit_step=lambda: train_step(*fixed), num_classes=num_classes)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=float(config["learning_rate"]), epochs=epochs,
        steps_per_epoch=steps_per_epoch)

    batches = iter(sdk.data_loader(_endless(train_loader)))
    for _ in range(epochs):
        model.train()
        total, seen = 0.0, 0
        for _ in range(steps_per_epoch):
            images, labels = next(batches)
            images, labels = to_device(images, labels)
            total += train_step(images, labels) * len(labels)
            seen += len(labels)
            schedule.step()
        val_loss, val_error = evaluate(step_model, val_loader, to_device, loss_fn, amp, device)
        sdk.report({"train_loss": total / seen, "val_loss": val_loss, "val_error": val_error},
                   samples=seen)


def _endless(loader: DataLoader) -> Any:
    """The loader's batches, epoch after epoch (a reported step need not be a whole epoch)."""
    while True:
        yield from loader


@torch.no_grad()
def evaluate(model: nn.Module, loader: DataLoader, to_device: Any, loss_fn: nn.Module,
             amp: torch.dtype | None, device: torch.device) -> tuple[float, float]:
    model.eval()
    loss, wrong, count = 0.0, 0, 0
    for images, labels in loader:
        images, labels = to_device(images, labels)
        with torch.autocast(device.type, dtype=amp or torch.float32, enabled=amp is not None):
            logits = model(images)
        loss += float(loss_fn(logits.float(), labels)) * len(labels)
        wrong += int((logits.argmax(1) != labels).sum())
        count += len(labels)
    return loss / count, wrong / count
