"""sdk.watch without Ray: the measures against their definitions, which layers are watched, when
a measurement is taken (fixed and adaptive spacing, ``until``), what travels with a report, the
model's mode and gradients left alone, a failing measurement never failing the trial, and each
bad input's message."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator

import ndt
import numpy as np
import pytest
import torch
from torch import nn

from searchsvc import sdk
from searchsvc.errors import ObjectiveError
from searchsvc.worker import dimensionality
from searchsvc.worker.context import DIMENSIONALITY_KEY, TrialContext, set_current
from searchsvc.worker.dimensionality import BUDGET_FRACTION, measure, schedule_from
from searchsvc.worker.trainable import _with_telemetry


@pytest.fixture(autouse=True)
def trial() -> Iterator[None]:
    set_current(TrialContext(max_steps=20))
    yield
    set_current(None)
    dimensionality.close_all()


def mlp(width: int = 16) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 4))


def test_the_participation_ratio_is_that_of_the_centred_covariance_eigenvalues() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 6)) * np.array([5.0, 3.0, 1.0, 0.5, 0.1, 0.1]) + 40.0
    eig = np.linalg.eigvalsh(np.cov(x, rowvar=False))
    pr, sr = measure(torch.from_numpy(x))
    assert pr == pytest.approx(eig.sum() ** 2 / (eig ** 2).sum(), rel=1e-4)
    assert sr == pytest.approx(eig.sum() / eig.max(), rel=1e-4)
    # stable rank is ndtracker's, on the centred matrix (its own works on the uncentred one)
    centred = torch.from_numpy(x - x.mean(axis=0)).float()
    assert sr == pytest.approx(ndt.stable_rank(centred), rel=1e-3)
    assert ndt.participation_ratio(torch.from_numpy(x).float()) < 1.5 < pr  # the offset's


def test_k_equal_directions_measure_k_and_a_constant_layer_measures_zero() -> None:
    rng = np.random.default_rng(1)
    basis = np.linalg.qr(rng.normal(size=(50, 50)))[0][:, :3]
    x = rng.choice([-1.0, 1.0], size=(4000, 3)) @ basis.T  # three directions, equal variance
    assert measure(torch.from_numpy(x))[0] == pytest.approx(3.0, rel=0.02)
    wide = torch.from_numpy(rng.normal(size=(20, 500)))  # wider than the batch: the Gram way
    eig = np.linalg.eigvalsh(np.cov(wide.numpy(), rowvar=False))
    assert measure(wide)[0] == pytest.approx(eig.sum() ** 2 / (eig ** 2).sum(), rel=1e-3)
    assert measure(torch.ones(32, 10)) == (0.0, 0.0)


def test_conv_maps_are_flattened_per_example() -> None:
    maps = torch.randn(16, 4, 5, 5)
    assert measure(maps) == pytest.approx(measure(maps.reshape(16, 100)))


def test_linear_and_conv_layers_are_watched_by_their_module_names() -> None:
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 36, 10))
    watcher = sdk.watch(model, every=1)
    model(torch.randn(8, 1, 8, 8))
    measured = dimensionality.take()
    assert watcher is not None and set(watcher.layers) == {"0", "3"}
    assert measured["source"] == "train" and set(measured["layers"]) == {"0", "3"}
    assert set(measured["layers"]["3"]) == {"participation_ratio", "stable_rank"}


def test_layers_picks_any_module_an_attention_output_included() -> None:
    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
            self.out = nn.Linear(8, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y, _ = self.attn(x, x, x)
            return self.out(y)

    model = Block()
    sdk.watch(model, every=1, layers=["attn", model.out])
    model(torch.randn(6, 5, 8))
    assert set(dimensionality.take()["layers"]) == {"attn", "out"}


def test_a_mapping_names_the_layers_the_same_across_architectures() -> None:
    for depth in (1, 3):
        model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(depth)], nn.Linear(8, 2))
        sdk.watch(model, every=1, layers={"first": model[0], "head": str(depth)})
        model(torch.randn(16, 8))
        assert set(dimensionality.take()["layers"]) == {"first", "head"}
        dimensionality.close_all()
    with pytest.raises(ObjectiveError, match="no module 'nine'"):
        sdk.watch(mlp(), layers={"head": "nine"})


def test_a_fixed_probe_is_measured_without_gradients_and_the_mode_is_restored() -> None:
    model = mlp()
    probe = torch.randn(64, 8)
    sdk.watch(model, probe=probe, every=1)
    model.train()
    model(torch.randn(4, 8)).sum().backward()  # a training step's forward on 4 examples
    first = dimensionality.take()
    assert first["source"] == "probe" and model.training
    model(torch.randn(4, 8))
    # the probe's 64 examples, not the batch's 4 (which show at most 3 dimensions)
    assert first["layers"]["0"] == dimensionality.take()["layers"]["0"]
    assert first["layers"]["0"]["participation_ratio"] > 3


def test_only_training_forward_passes_count_and_every_spaces_them() -> None:
    model = mlp()
    sdk.watch(model, every=3)
    taken = []
    for i in range(1, 8):
        model.eval()
        model(torch.randn(16, 8))  # validation passes: never counted, never measured
        model.train()
        model(torch.randn(16, 8))
        taken.append(i if dimensionality.take() else None)
    assert [t for t in taken if t] == [1, 4, 7]  # the first pass, then every third
    assert not model[0]._forward_hooks  # the layers are hooked only for a measured pass


def test_with_a_probe_every_counts_from_the_measurement_as_watched() -> None:
    model = mlp()
    watcher = sdk.watch(model, probe=torch.randn(32, 8), every=3)
    assert watcher is not None and watcher.measured == 1  # as watched: the model as built
    for _ in range(7):
        model(torch.randn(16, 8))
    assert watcher.measured == 3  # passes 3 and 6


def test_until_stops_measuring_after_that_many_reported_steps() -> None:
    set_current(TrialContext(max_steps=20, dimensionality={"every": 1, "until": 0.1}))
    model = mlp()
    sdk.watch(model)
    found = []
    for _ in range(5):
        model(torch.randn(16, 8))
        found.append(bool(dimensionality.take()))
    assert found == [True, True, False, False, False]  # 10% of 20 steps


def test_adaptive_spacing_keeps_measuring_within_the_budget(monkeypatch) -> None:
    # A clock the test moves: a training step takes 0.1 s, a measurement 0.1554 s (0.0777 a
    # layer). The k-th measurement is taken once k of them fit in the budget's share of the
    # training time; the one as the model is watched (with its probe) is the first.
    now = [0.0]
    monkeypatch.setattr(dimensionality.Watcher, "clock", staticmethod(lambda: now[0]))
    real = dimensionality.measure

    def timed(tensor: torch.Tensor) -> tuple[float, float]:
        now[0] += 0.0777
        return real(tensor)

    monkeypatch.setattr(dimensionality, "measure", timed)
    model = mlp()
    watcher = sdk.watch(model, probe=torch.randn(64, 8))
    assert watcher is not None and watcher.measured == 1
    measured_at = []
    for step in range(1, 401):
        now[0] += 0.1
        model(torch.randn(4, 8))
        if dimensionality.take():
            measured_at.append(step)
    due = [math.ceil(0.1554 * k / (BUDGET_FRACTION * 0.1) - 1e-9) for k in range(2, 40)]
    assert measured_at == [1, *(s for s in due if s <= 400)]  # reported at the first step
    assert watcher.spent == pytest.approx(0.1554 * len(measured_at))
    assert watcher.spent <= BUDGET_FRACTION * 400 * 0.1


def test_measurements_ride_with_a_ray_report_under_their_own_key() -> None:
    sent: list[dict] = []
    report = _with_telemetry(lambda metrics, *a, **k: sent.append(dict(metrics)))
    model = mlp()
    sdk.watch(model, every=2)
    model(torch.randn(16, 8))
    report({"loss": 1.0})
    model(torch.randn(16, 8))  # the second pass: not due
    report({"loss": 0.5})
    assert set(sent[0][DIMENSIONALITY_KEY]["layers"]) == {"0", "2"}
    assert DIMENSIONALITY_KEY not in sent[1] and sent[1]["loss"] == 0.5


def test_a_failing_measurement_warns_once_and_the_trial_goes_on(monkeypatch) -> None:
    model = mlp()
    sdk.watch(model, every=1)
    monkeypatch.setattr(dimensionality, "measure", lambda t: 1 / 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            model(torch.randn(16, 8)).sum().backward()
    assert len(caught) == 1 and "ZeroDivisionError" in str(caught[0].message)
    assert dimensionality.take() == {}


def test_hooks_are_removed_when_the_trial_ends() -> None:
    model = mlp()
    sdk.watch(model, every=1)
    dimensionality.close_all()
    model(torch.randn(16, 8))
    assert dimensionality.take() == {} and not model._forward_hooks and not model[0]._forward_hooks


def test_a_model_with_no_layer_to_watch_is_refused_naming_its_modules() -> None:
    with pytest.raises(ObjectiveError, match=r"Sequential has no Linear or Conv layer.*'0'"):
        sdk.watch(nn.Sequential(nn.ReLU(), nn.Tanh()))
    with pytest.raises(ObjectiveError, match=r"no module 'enc'.*'0', '1', '2'"):
        sdk.watch(mlp(), layers=["enc"])
    with pytest.raises(ObjectiveError, match=r"torch\.nn\.Module, got str"):
        sdk.watch("model")


def test_a_probe_the_model_rejects_names_the_layer_and_the_shapes() -> None:
    with pytest.raises(ObjectiveError) as caught:
        sdk.watch(mlp(), probe=torch.randn(5, 3))
    message = str(caught.value)
    assert "probe of shape (5, 3)" in message and "layer '0'" in message
    assert "in_features=8" in message and "(5, 3)" in message


@pytest.mark.parametrize("every", [0, -2, 1.5, True, "often"])
def test_every_must_be_a_positive_whole_number(every: object) -> None:
    with pytest.raises(ObjectiveError, match=rf"every={every!r}.*positive whole number"):
        sdk.watch(mlp(), every=every)  # type: ignore[arg-type]


def test_the_study_files_schedule_is_followed_unless_the_call_sets_every() -> None:
    assert schedule_from("auto", "off", 10) == dimensionality.Schedule(None, None)
    assert schedule_from(5, 0.25, 10) == dimensionality.Schedule(5, 3)
    assert schedule_from(None, 4, None) == dimensionality.Schedule(None, 4)


def test_run_locally_returns_each_reports_measurements_under_their_key() -> None:
    def objective(config: dict) -> None:
        model = mlp()
        sdk.watch(model, every=2)
        for step in range(3):
            model(torch.randn(16, 8))
            sdk.report({"loss": 1.0 / (step + 1)})

    reports = sdk.run_locally(objective, {})
    assert [DIMENSIONALITY_KEY in r for r in reports] == [True, False, True]
    assert [r["loss"] for r in reports] == [1.0, 0.5, pytest.approx(1 / 3)]


def test_a_reused_workers_trials_each_report_only_their_own_measurements() -> None:
    # Ray Tune reuses a worker process: trial 2's thread may still be ending (its hooks on, a
    # measurement pending) when trial 3 starts watching in another thread.
    import threading

    sent: list[dict] = []
    report = _with_telemetry(lambda metrics, *a, **k: sent.append(dict(metrics)))
    set_current(TrialContext(number=2, max_steps=20))
    old = mlp(1)
    sdk.watch(old, every=1)
    old(torch.randn(16, 8))  # measured: pending for trial 2

    def trial_three() -> None:
        set_current(TrialContext(number=3, max_steps=20))  # the process's trial from now on
        new = mlp(16)
        sdk.watch(new, every=1)
        new(torch.randn(16, 8))
        report({"loss": 0.5})

    thread = threading.Thread(target=trial_three)
    thread.start()
    thread.join()
    report({"loss": 1.0})  # trial 2's thread reports last
    three, two = sent
    assert three["searchsvc_trial"] == 3 and two["searchsvc_trial"] == 2
    assert three[DIMENSIONALITY_KEY]["layers"]["0"]["participation_ratio"] > 1.5
    assert two[DIMENSIONALITY_KEY]["layers"]["0"]["participation_ratio"] == pytest.approx(1.0)
    dimensionality.close_trial(2)  # trial 2 ends: trial 3's watcher keeps measuring
    assert [w.trial for w in dimensionality._watchers] == [3]
