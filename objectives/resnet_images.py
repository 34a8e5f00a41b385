"""A ResNet-style image classifier on a procedurally generated image dataset: the realistic
GPU objective, GPU-bound as a real training script on a GPU is (a dataset decoded once and
held in memory, augmented on the device per batch, a model that fills the GPU, mixed
precision), downloading nothing.

Data: ``dataset_size`` RGB images of ``image_size`` x ``image_size`` (default 50,000 of
32 x 32, CIFAR-sized) in ``num_classes`` classes (default 10). Each class is a few coloured
sinusoidal gratings with its own frequencies, orientations and colours; every image draws its
class's pattern with a random phase, shift, contrast and Gaussian noise, so the classes are
learnable but not trivially (a linear model does poorly, a small CNN well). The images are made
once per worker process, in whole-tensor operations (no per-sample Python loop), into one
uint8 tensor (as a decoded, cached dataset is held) that moves to the device once; the
validation set is the next ``dataset_size // 10`` images. Each training batch is gathered by
index on the device and augmented there (random crop with 4 pixels of padding, horizontal flip,
scaling to floats), so nothing waits on the CPU per sample.
``objectives/resnet_input_bound.py`` trains the same model on the same kind of images built one
sample at a time in DataLoader workers: the planted input-bound study.

Model: a stem convolution, then 3 stages of ``depth`` basic residual blocks with ``width``,
2x``width`` and 4x``width`` channels (stride 2 between stages), global pooling and a linear
head.

Config: learning_rate (required), weight_decay, momentum, label_smoothing, batch_size, width,
depth, amp (bf16 autocast where supported: CUDA with bf16, else off), channels_last (on CUDA;
a CPU keeps the default layout), compile (torch.compile), steps_per_epoch (batches per
reported step; default a whole epoch), dataset_size, image_size, num_classes, data_seed,
augment (default true).
Reports train_loss, val_loss and val_error (and the samples trained, for throughput) every
epoch for ``budget.max_steps`` epochs; uses searchsvc's data-loader wrapper (input wait time)
and offers the preflight's overfit-one-batch check.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset

from searchsvc import sdk

PATTERNS_PER_CLASS = 3


class Gratings:
    """The classes' gratings for ``data_seed``: per class, the frequencies (cycles per image),
    orientations and RGB colours of its patterns, and the pixel grid they are drawn on."""

    def __init__(self, image_size: int = 32, num_classes: int = 10, data_seed: int = 0):
        self.image_size, self.num_classes, self.data_seed = image_size, num_classes, data_seed
        g = torch.Generator().manual_seed(data_seed)
        self.freq = 1.0 + 4.0 * torch.rand(num_classes, PATTERNS_PER_CLASS, generator=g)
        self.angle = math.pi * torch.rand(num_classes, PATTERNS_PER_CLASS, generator=g)
        self.colour = torch.rand(num_classes, PATTERNS_PER_CLASS, 3, generator=g) * 2 - 1
        axis = torch.linspace(0, 1, image_size)
        self.yy, self.xx = torch.meshgrid(axis, axis, indexing="ij")


class GratingImages(Gratings, Dataset):
    """Images ``offset`` .. ``offset + size - 1`` of the generated dataset, one at a time (each
    a pure function of (``data_seed``, its number)): a (3, image_size, image_size) float tensor
    and its class. The per-sample path of the input-bound objective. ``decode_scale``: each
    image's gratings are drawn at that many times its side and area-resized down, as a
    decoded photo is resized (1: drawn at its own size)."""

    def __init__(self, size: int, image_size: int = 32, num_classes: int = 10,
                 data_seed: int = 0, offset: int = 0, decode_scale: int = 1):
        super().__init__(image_size, num_classes, data_seed)
        self.size, self.offset, self.decode_scale = size, offset, max(int(decode_scale), 1)
        if self.decode_scale > 1:
            axis = torch.linspace(0, 1, image_size * self.decode_scale)
            self.yy, self.xx = torch.meshgrid(axis, axis, indexing="ij")

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if not 0 <= index < self.size:
            raise IndexError(index)
        number = self.offset + index
        g = torch.Generator().manual_seed(self.data_seed * 1_000_003 + number)
        label = int(torch.randint(self.num_classes, (1,), generator=g))
        image = torch.zeros(3, *self.xx.shape)
        shift = torch.rand(2, generator=g) * 0.3
        for k in range(PATTERNS_PER_CLASS):
            angle = self.angle[label, k] + 0.3 * (torch.rand(1, generator=g) - 0.5)
            along = ((self.xx + shift[0]) * torch.cos(angle)
                     + (self.yy + shift[1]) * torch.sin(angle))
            phase = 2 * math.pi * torch.rand(1, generator=g)
            wave = torch.sin(2 * math.pi * self.freq[label, k] * along + phase)
            image += self.colour[label, k].view(3, 1, 1) * wave
        if self.decode_scale > 1:
            image = F.avg_pool2d(image[None], self.decode_scale)[0]
        contrast = 0.5 + torch.rand(1, generator=g)
        image = contrast * image / PATTERNS_PER_CLASS
        image += 0.6 * torch.randn(image.shape, generator=g)
        return image, label




# Pixel values of the generated images span about -3..3 (gratings plus noise): stored as uint8
# over this range, as a decoded image dataset is.
PIXEL_RANGE = 3.0
_CHUNK = 4096  # images generated per whole-tensor operation (bounds the float scratch memory)
_cache: dict[tuple[int, ...], tuple[torch.Tensor, torch.Tensor]] = {}


def make_images(count: int, image_size: int = 32, num_classes: int = 10, data_seed: int = 0,
                offset: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` generated images as one uint8 tensor (count, 3, image_size, image_size) and
    their int64 labels, drawn with whole-tensor operations per chunk (no per-sample loop):
    the same classes' gratings as :class:`GratingImages`, each image's phase, shift, contrast
    and noise drawn from one generator seeded by (``data_seed``, ``offset``)."""
    gratings = Gratings(image_size, num_classes, data_seed)
    g = torch.Generator().manual_seed(data_seed * 1_000_003 + offset + 1)
    images = torch.empty(count, 3, image_size, image_size, dtype=torch.uint8)
    labels = torch.randint(num_classes, (count,), generator=g)
    for start in range(0, count, _CHUNK):
        chunk = labels[start:start + _CHUNK]
        images[start:start + len(chunk)] = _to_uint8(_draw(gratings, chunk, g))
    return images, labels


def _draw(gratings: Gratings, labels: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Float images of ``labels``' classes, all at once: (n, 3, size, size)."""
    n, p = len(labels), PATTERNS_PER_CLASS
    shift = (torch.rand(n, 2, 1, 1, 1, generator=g) * 0.3)
    angle = gratings.angle[labels] + 0.3 * (torch.rand(n, p, generator=g) - 0.5)  # (n, p)
    along = ((gratings.xx + shift[:, 0]) * torch.cos(angle)[..., None, None]
             + (gratings.yy + shift[:, 1]) * torch.sin(angle)[..., None, None])  # (n, p, s, s)
    phase = 2 * math.pi * torch.rand(n, p, 1, 1, generator=g)
    wave = torch.sin(2 * math.pi * gratings.freq[labels][..., None, None] * along + phase)
    image = torch.einsum("npc,npyx->ncyx", gratings.colour[labels], wave)
    contrast = 0.5 + torch.rand(n, 1, 1, 1, generator=g)
    image = contrast * image / p
    return image + 0.6 * torch.randn(image.shape, generator=g)


def _to_uint8(images: torch.Tensor) -> torch.Tensor:
    scaled = (images + PIXEL_RANGE) * (255.0 / (2 * PIXEL_RANGE))
    return scaled.round().clamp(0, 255).to(torch.uint8)


def to_float(images: torch.Tensor) -> torch.Tensor:
    """uint8 pixels back to the generated float range (on whatever device they are)."""
    return images.float() * (2 * PIXEL_RANGE / 255.0) - PIXEL_RANGE


def cached_images(count: int, image_size: int, num_classes: int, data_seed: int,
                  offset: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`make_images`, made once per worker process: Tune reuses a worker for trial after
    trial, and every trial trains on the same data, as a cached decoded dataset would be."""
    key = (count, image_size, num_classes, data_seed, offset)
    if key not in _cache:
        _cache[key] = make_images(count, image_size, num_classes, data_seed, offset)
    return _cache[key]


def augment(images: torch.Tensor, generator: torch.Generator | None = None,
            padding: int | None = None) -> torch.Tensor:
    """A uint8 batch (n, 3, s, s) randomly cropped (``padding`` pixels of zero padding, an
    eighth of the side by default: 4 on 32 x 32),
    flipped left-right, and turned into floats: whole-batch operations on the batch's own
    device, with no per-sample loop."""
    n, _, size, _ = images.shape
    device = images.device
    padding = max(1, size // 8) if padding is None else padding
    padded = F.pad(to_float(images), (padding,) * 4)
    dy, dx = (torch.randint(2 * padding + 1, (2, n), generator=generator)
              .to(device).unbind(0))
    rows = dy[:, None] + torch.arange(size, device=device)  # (n, s)
    cols = dx[:, None] + torch.arange(size, device=device)
    batch = torch.arange(n, device=device)[:, None, None]
    cropped = padded.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]]
    cropped = cropped.permute(0, 3, 1, 2)  # back to (n, 3, s, s)
    flip = (torch.rand(n, generator=generator) < 0.5).to(device)
    return torch.where(flip[:, None, None, None], cropped.flip(3), cropped)


def device_batches(images: torch.Tensor, labels: torch.Tensor, batch_size: int,
                   generator: torch.Generator) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Shuffled batches of a dataset already on its device, epoch after epoch: a random
    permutation a pass, each batch one gather by index (full batches only)."""
    count = len(labels)
    while True:
        order = torch.randperm(count, generator=generator).to(images.device)
        for start in range(0, count - batch_size + 1, batch_size):
            index = order[start:start + batch_size]
            yield images[index], labels[index]


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



Batch = tuple[torch.Tensor, torch.Tensor]


def train(config: dict[str, Any]) -> None:
    """The GPU-bound objective (see the module docstring)."""
    sdk.seed_everything()
    device = sdk.device()
    size = int(config.get("dataset_size", 50_000))
    image_size = int(config.get("image_size", 32))
    num_classes = int(config.get("num_classes", 10))
    data_seed = int(config.get("data_seed", 0))
    batch_size = min(int(config.get("batch_size", 512)), size)
    images, labels = (t.to(device) for t in cached_images(size, image_size, num_classes,
                                                            data_seed))
    val_images, val_labels = (t.to(device) for t in cached_images(
        max(size // 10, batch_size), image_size, num_classes, data_seed, offset=size))
    shuffle = torch.Generator().manual_seed(sdk.trial_context().seed)
    wanted = bool(config.get("augment", True))

    def prepare(batch: Batch) -> Batch:
        pixels, targets = batch
        return (augment(pixels, shuffle) if wanted else to_float(pixels)), targets

    val = [(to_float(val_images[i:i + batch_size]), val_labels[i:i + batch_size])
           for i in range(0, len(val_labels), batch_size)]
    batches = sdk.data_loader(device_batches(images, labels, batch_size, shuffle), workers=0)
    fit(config, batches, prepare, val, fixed=prepare((images[:64], labels[:64])),
        batches_per_epoch=size // batch_size, num_classes=num_classes)


def fit(config: dict[str, Any], batches: Any, prepare: Callable[[Batch], Batch],
        val: Any, *, fixed: Batch, batches_per_epoch: int, num_classes: int) -> None:
    """The training loop both image objectives share: the ResNet of ``config`` trained with
    SGD and a one-cycle schedule on ``batches`` (an endless iterable of batches, already
    wrapped by ``sdk.data_loader``; ``prepare`` turns one into the model's inputs), evaluated
    on ``val`` (an iterable of the model's input batches) and reported every epoch of
    ``steps_per_epoch`` batches (default ``batches_per_epoch``). ``fixed``: the batch the
    preflight's overfit check trains on."""
    device = sdk.device()
    # channels_last speeds up convolutions on a GPU's tensor cores; on a CPU it gains little,
    # and this CPU build's backward of a convolution with very few channels in that layout
    # can corrupt its heap (seen on AMD EPYC): CPU runs keep the default layout.
    memory_format = (torch.channels_last if config.get("channels_last", True)
                     and device.type == "cuda" else torch.contiguous_format)
    model = build_model(int(config.get("width", 32)), int(config.get("depth", 2)),
                        num_classes).to(device, memory_format=memory_format)
    step_model: Any = torch.compile(model) if config.get("compile", False) else model
    optimizer = torch.optim.SGD(model.parameters(), lr=float(config["learning_rate"]),
                                momentum=float(config.get("momentum", 0.9)), nesterov=True,
                                weight_decay=float(config.get("weight_decay", 5e-4)))
    loss_fn = nn.CrossEntropyLoss(label_smoothing=float(config.get("label_smoothing", 0.0)))
    amp = _amp_dtype(device, bool(config.get("amp", True)))
    epochs = sdk.max_steps(10)
    steps_per_epoch = int(config.get("steps_per_epoch") or batches_per_epoch)

    def to_device(batch: Batch) -> Batch:
        images, labels = batch
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
    one = to_device(prepare(fixed))
    # Before the schedule, which starts from a 25th of the learning rate.
    sdk.preflight_checks(overfit_step=lambda: train_step(*one), num_classes=num_classes)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=float(config["learning_rate"]), epochs=epochs,
        steps_per_epoch=steps_per_epoch)
    stream = iter(batches)
    for _ in range(epochs):
        model.train()
        total, seen = 0.0, 0
        for _ in range(steps_per_epoch):
            images, labels = to_device(prepare(next(stream)))
            total += train_step(images, labels) * len(labels)
            seen += len(labels)
            schedule.step()
        val_loss, val_error = evaluate(step_model, val, to_device, loss_fn, amp, device)
        sdk.report({"train_loss": total / seen, "val_loss": val_loss, "val_error": val_error},
                   samples=seen)


@torch.no_grad()
def evaluate(model: nn.Module, batches: Any, to_device: Callable[[Batch], Batch],
             loss_fn: nn.Module, amp: torch.dtype | None, device: torch.device
             ) -> tuple[float, float]:
    model.eval()
    loss, wrong, count = 0.0, 0, 0
    for batch in batches:
        images, labels = to_device(batch)
        with torch.autocast(device.type, dtype=amp or torch.float32, enabled=amp is not None):
            logits = model(images)
        loss += float(loss_fn(logits.float(), labels)) * len(labels)
        wrong += int((logits.argmax(1) != labels).sum())
        count += len(labels)
    return loss / count, wrong / count
