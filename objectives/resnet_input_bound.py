"""The planted input-bound image objective: objectives/resnet_images.py's ResNet trained on
the same kind of generated images, but each image built one sample at a time in Python by a
map-style dataset (:class:`~objectives.resnet_images.GratingImages`) behind a torch
DataLoader, as a pipeline that decodes and augments every sample on the CPU does. On a fast GPU
the step waits for these images: the report and preflight's input check name it input-bound
(on an H100, 4 DataLoader workers' worth of CPUs fed a ResNet at about a fifth of the GPU).

Config: as objectives/resnet_images.py, plus ``workers`` (DataLoader worker processes,
default 4) and ``decode_scale`` (each image drawn at that many times its side and resized
down, as a photo is decoded and resized; default 1); ``augment`` does not apply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils.data import DataLoader

from objectives.resnet_images import GratingImages, fit
from searchsvc import sdk


def train(config: dict[str, Any]) -> None:
    sdk.seed_everything()
    on_gpu = sdk.device().type == "cuda"
    size = int(config.get("dataset_size", 50_000))
    image_size = int(config.get("image_size", 32))
    num_classes = int(config.get("num_classes", 10))
    data_seed = int(config.get("data_seed", 0))
    batch_size = int(config.get("batch_size", 128))
    workers = int(config.get("workers", 4))
    scale = int(config.get("decode_scale", 1))
    train_set = GratingImages(size, image_size, num_classes, data_seed, decode_scale=scale)
    val_set = GratingImages(max(size // 10, batch_size), image_size, num_classes, data_seed,
                            offset=size, decode_scale=scale)
    options: dict[str, Any] = dict(batch_size=batch_size, num_workers=workers,
                                   pin_memory=on_gpu, persistent_workers=workers > 0,
                                   drop_last=True)
    if workers > 0:
        options["prefetch_factor"] = 4
    train_loader = DataLoader(train_set, shuffle=True, **options)
    val_loader = DataLoader(val_set, shuffle=False, **{**options, "drop_last": False})
    fixed = next(iter(DataLoader(train_set, batch_size=min(batch_size, 64))))
    # The generator hides the DataLoader: its workers are named for the telemetry.
    batches = sdk.data_loader(_endless(train_loader), workers=workers)
    fit(config, batches, lambda batch: batch, val_loader, fixed=(fixed[0], fixed[1]),
        batches_per_epoch=len(train_loader), num_classes=num_classes)


def _endless(loader: DataLoader) -> Iterator[Any]:
    """The loader's batches, epoch after epoch (a reported step need not be a whole epoch)."""
    while True:
        yield from loader
