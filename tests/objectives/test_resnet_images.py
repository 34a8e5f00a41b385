"""The image objectives on CPU at tiny sizes: the generated dataset is deterministic and
learnable (a linear model is not enough, the ResNet is); the GPU-bound objective trains on its
in-memory uint8 images augmented per batch, never touching the per-sample dataset, and the
planted input-bound one trains through a DataLoader; both report every epoch with the samples
they trained on."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import torch
from torch import nn

from objectives import resnet_input_bound
from objectives.resnet_images import (
    GratingImages,
    augment,
    build_model,
    make_images,
    to_float,
    train,
)
from searchsvc import sdk

TINY = {"learning_rate": 0.1, "dataset_size": 2048, "image_size": 16, "width": 8, "depth": 1,
        "batch_size": 64, "workers": 0, "amp": True, "channels_last": True}


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread: these tiny models gain nothing from more, and on a busy 2-core
    machine more threads cost ten times the time."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_every_image_is_a_pure_function_of_the_seed_and_its_index() -> None:
    a, b = GratingImages(64, 16, 10, data_seed=3), GratingImages(64, 16, 10, data_seed=3)
    for i in (0, 17, 63):
        assert torch.equal(a[i][0], b[i][0]) and a[i][1] == b[i][1]
    other = GratingImages(64, 16, 10, data_seed=4)
    assert not torch.equal(a[5][0], other[5][0])
    image, label = a[0]
    assert image.shape == (3, 16, 16) and 0 <= label < 10
    labels = {a[i][1] for i in range(64)}
    assert len(labels) >= 8  # every class turns up


def test_the_model_keeps_its_shape_for_every_width_and_depth() -> None:
    for width, depth in ((8, 1), (16, 2)):
        out = build_model(width, depth, num_classes=7)(torch.zeros(2, 3, 16, 16))
        assert out.shape == (2, 7)


def test_the_in_memory_images_are_uint8_deterministic_and_every_class_turns_up() -> None:
    images, labels = make_images(256, 16, 10, data_seed=3)
    again, _ = make_images(256, 16, 10, data_seed=3)
    assert images.dtype == torch.uint8 and images.shape == (256, 3, 16, 16)
    assert torch.equal(images, again) and len(set(labels.tolist())) == 10
    assert not torch.equal(images, make_images(256, 16, 10, data_seed=4)[0])
    assert int(images.min()) < 40 and int(images.max()) > 215  # the range is used


def test_augmenting_crops_and_flips_the_batch_as_a_whole() -> None:
    images, _ = make_images(64, 16, 10)
    out = augment(images, torch.Generator().manual_seed(0))
    assert out.shape == (64, 3, 16, 16) and out.dtype == torch.float32
    plain = to_float(images)
    # Each output is its image shifted by at most 2 pixels (an eighth of 16), maybe mirrored:
    # its centre appears somewhere in the (mirrored) original.
    for i in (0, 31, 63):
        centre = out[i, :, 6:10, 6:10]
        found = any(torch.equal(centre, source[:, y:y + 4, x:x + 4])
                    for source in (plain[i], plain[i].flip(2))
                    for y in range(4, 9) for x in range(4, 9))
        assert found, i
    assert not torch.equal(out, plain)  # some crop or flip happened


def test_the_gpu_objective_never_builds_images_one_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def per_sample(self: GratingImages, index: int) -> None:
        raise AssertionError("the per-sample dataset was used")

    monkeypatch.setattr(GratingImages, "__getitem__", per_sample)
    reports = sdk.run_locally(train, {**TINY, "steps_per_epoch": 4}, metric="val_error",
                              max_steps=1)
    assert len(reports) == 1 and math.isfinite(reports[0]["val_loss"])


def test_the_input_bound_objective_trains_through_its_dataloader() -> None:
    reports = sdk.run_locally(resnet_input_bound.train, {**TINY, "steps_per_epoch": 4},
                              metric="val_error", max_steps=2)
    assert len(reports) == 2 and all(math.isfinite(r["val_loss"]) for r in reports)


def test_the_objective_trains_and_reports_every_epoch() -> None:
    reports = sdk.run_locally(train, TINY, metric="val_error", max_steps=3)
    assert len(reports) == 3
    assert all({"train_loss", "val_loss", "val_error"} <= set(r) for r in reports)
    assert all(math.isfinite(r["val_loss"]) for r in reports)
    # Learnable: from chance (0.9 for 10 classes) to well below it in three tiny epochs.
    assert reports[-1]["val_error"] < 0.5
    assert reports[-1]["train_loss"] < reports[0]["train_loss"]


def test_a_linear_model_cannot_learn_the_classes() -> None:
    torch.manual_seed(0)
    train_set, val_set = GratingImages(1024, 16), GratingImages(512, 16, offset=1024)
    x = torch.stack([train_set[i][0] for i in range(1024)])
    y = torch.tensor([train_set[i][1] for i in range(1024)])
    xv = torch.stack([val_set[i][0] for i in range(512)])
    yv = torch.tensor([val_set[i][1] for i in range(512)])
    linear = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 10))
    optimizer = torch.optim.Adam(linear.parameters(), lr=1e-3)
    for _ in range(100):
        optimizer.zero_grad()
        nn.functional.cross_entropy(linear(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        assert (linear(xv).argmax(1) != yv).float().mean() > 0.5
