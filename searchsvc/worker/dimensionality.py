"""Representation dimensionality, measured inside a trial: :func:`searchsvc.sdk.watch`.

A watched model's layers (every ``nn.Linear`` and ``nn.Conv*`` by default, named as in
``model.named_modules()``) are hooked; at a measurement each layer's output over a batch is
flattened per example into an ``N x D`` matrix ``X`` and measured as

- **participation ratio** ``(Σλ)² / Σλ²`` of the eigenvalues ``λ`` of the covariance of the
  centred activations (Ansuini et al., NeurIPS 2019; RankMe, ICML 2023): about ``k`` when the
  variance spreads evenly over ``k`` directions, 1 when one direction holds it all;
- **stable rank** ``Σλ / max λ`` of the same eigenvalues (ndtracker's ``stable_rank`` of the
  centred matrix).

A layer whose outputs do not vary over the batch measures 0 (no direction is used). The
eigenvalues come from the smaller of ``XᵀX`` and ``XXᵀ``, which share their non-zero ones, so a
wide convolution's map costs ``N² D``, not ``D³``; a batch of ``N`` examples can show at most
``N - 1`` dimensions.

A measurement runs on the fixed ``probe`` batch when given (no gradients, in eval mode, the
model's mode restored after: comparable across steps and trials), else on the training batch the
forward pass just processed. With a probe, the model is measured once as ``watch`` is called
(which also checks that the model takes the probe); without one, the first training forward
pass is. ``every`` counts training forward passes (the watched model called in training mode):
with ``every: N``, every N-th pass after that first measurement is measured too (N, 2N, ...
with a probe; 1 + N, 1 + 2N, ... without). By default the spacing is
adaptive: a pass is measured when all the measurements so far, this one included (at the mean
cost of those taken), fit in :data:`BUDGET_FRACTION` of the
training time since the watch began (both timed here, the measurements' time left out of the
training time); that spaces them by the cost of one measurement over that of one training step.

Measurements travel to the driver with the trial's next report (``sdk.report``, or
``ray.tune.report`` / ``ray.train.report`` in Ray-native objectives) under
:data:`~searchsvc.worker.context.DIMENSIONALITY_KEY`: per layer, the latest measurement since
the previous report. A measurement that fails warns once and turns measuring off for the trial;
the trial itself never fails for it. On a data-parallel trial only rank 0 measures (its metrics
are the trial's).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from searchsvc.errors import ObjectiveError
from searchsvc.worker.context import current, reporting_trial

# Adaptive spacing: the measurements take at most this share of the training time, which leaves
# room for what the watch costs beside them (its hooks, the allocations' effect on the steps
# after) within 5% of the trial's time (benchmarks/dimensionality.py measures the whole).
BUDGET_FRACTION = 0.035
_watchers: list[Watcher] = []


@dataclass(frozen=True)
class Schedule:
    """When to measure: ``every`` training forward passes (None: adaptive) until ``until``
    reported steps (None: through the whole trial)."""

    every: int | None = None
    until: int | None = None


def measure(activations: Any) -> tuple[float, float]:
    """(participation ratio, stable rank) of one layer's batch of outputs (module docstring)."""
    import torch

    x = activations.detach()
    x = x.reshape(x.shape[0], -1).float()
    x = x - x.mean(dim=0, keepdim=True)
    n, d = x.shape
    gram = x @ x.T if d > n else x.T @ x
    eigenvalues = torch.linalg.eigvalsh(gram.double().cpu()).clamp(min=0.0)
    total = float(eigenvalues.sum())
    if n < 2 or not math.isfinite(total) or total <= 1e-12 * max(1, n * d):
        return 0.0, 0.0
    return total * total / float((eigenvalues ** 2).sum()), total / float(eigenvalues.max())


def schedule_from(every: Any, until: Any, max_steps: int | None) -> Schedule:
    """The schedule from ``sdk.watch``'s ``every`` and the study file's ``dimensionality``
    section (``every: auto | N``, ``until: off | FRACTION | STEPS``; FRACTION of ``max_steps``).
    ObjectiveError for an ``every`` that is not a positive whole number."""
    if every in (None, "auto"):
        count = None
    elif isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ObjectiveError(
            f"sdk.watch(every={every!r}): every must be a positive whole number of training "
            "forward passes between measurements, or None for adaptive spacing")
    else:
        count = every
    if until in (None, "off", False):
        return Schedule(count, None)
    if isinstance(until, float) and until < 1:
        if max_steps is None:
            return Schedule(count, None)
        return Schedule(count, max(1, math.ceil(until * max_steps)))
    return Schedule(count, int(until))


def pick_layers(model: Any, layers: Sequence[Any] | Mapping[str, Any] | None
                ) -> dict[str, Any]:
    """The layers to watch, by their ``named_modules()`` names: every Linear and Conv layer, or
    the modules (or names) in ``layers``; a mapping names them itself ({"head": model.fc}: the
    same name for the same role across architectures whose module paths differ).
    ObjectiveError naming what is wrong."""
    import torch.nn as nn

    named = dict(model.named_modules())
    if isinstance(layers, Mapping):
        return {str(alias): next(iter(pick_layers(model, [layer]).values()))
                for alias, layer in layers.items()}
    if layers is None:
        found = {name: m for name, m in named.items()
                 if isinstance(m, nn.Linear | nn.Conv1d | nn.Conv2d | nn.Conv3d) and name}
        if not found:
            raise ObjectiveError(
                f"sdk.watch: {type(model).__name__} has no Linear or Conv layer to watch; pass "
                f"layers=[...] naming some of its modules: {_names(named)}")
        return found
    if not layers:
        raise ObjectiveError("sdk.watch(layers=[]): name at least one layer to watch")
    by_module = {id(m): name for name, m in named.items()}
    chosen: dict[str, Any] = {}
    for layer in layers:
        if isinstance(layer, str):
            if layer not in named or not layer:
                raise ObjectiveError(
                    f"sdk.watch(layers=[{layer!r}, ...]): {type(model).__name__} has no module "
                    f"{layer!r}; its modules are: {_names(named)}")
            chosen[layer] = named[layer]
        elif id(layer) in by_module and by_module[id(layer)]:
            chosen[by_module[id(layer)]] = layer
        else:
            raise ObjectiveError(
                f"sdk.watch: the layer {type(layer).__name__} given in layers= is not a "
                f"submodule of the watched {type(model).__name__}")
    return chosen


def _names(named: Mapping[str, Any], limit: int = 30) -> str:
    names = [n for n in named if n]
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "") or "none"


def _first_tensor(output: Any) -> Any:
    """A layer's output tensor: attention modules return (output, weights)."""
    if isinstance(output, tuple | list):
        return output[0] if output else None
    return output


class Watcher:
    """One watched model: its hooks, schedule and the measurements not yet reported."""

    clock = staticmethod(time.perf_counter)  # what the adaptive spacing times with

    def __init__(self, model: Any, probe: Any, layers: Mapping[str, Any], schedule: Schedule):
        self.model, self.probe, self.layers, self.schedule = model, probe, layers, schedule
        self.trial = reporting_trial()  # whose reports carry its measurements
        self.source = "probe" if probe is not None else "train"
        self.captured: dict[str, Any] = {}
        self.capturing: list[Any] = []  # the layers' hooks, only while a pass is measured
        self.measuring = False
        self.disabled = False
        self.forwards = 0
        self.reports = 0
        self.started = self.clock()
        self.spent = 0.0  # seconds spent measuring
        self.measured = 0  # measurements taken
        self.measured_at = 0  # the training forward pass last measured (0: as watched)
        self.pending: dict[str, dict[str, float]] = {}
        self.handles = [model.register_forward_pre_hook(self._before),
                        model.register_forward_hook(self._after)]

    def _capture(self, name: str) -> Any:
        def hook(module: Any, inputs: Any, output: Any) -> None:
            self.captured[name] = _first_tensor(output)

        return hook

    def _arm(self) -> None:
        """Hook the layers for the pass about to be measured. Only then: every other pass runs
        with the model's two hooks alone, which keeps a small model's steps as fast."""
        self._disarm()  # a pass that raised before its end left them on
        self.capturing = [module.register_forward_hook(self._capture(name))
                          for name, module in self.layers.items()]

    def _disarm(self) -> None:
        for handle in self.capturing:
            handle.remove()
        self.capturing = []

    def _before(self, module: Any, inputs: Any) -> None:
        if self.measuring or not module.training:
            return
        self.forwards += 1
        if self.probe is None and self._due():
            self._arm()

    def _after(self, module: Any, inputs: Any, output: Any) -> None:
        if self.measuring or not module.training or self.disabled:
            return
        if self.probe is None and not self.capturing:
            return
        if self.probe is not None and not self._due():
            return
        try:
            self.measure_now()
        except Exception as exc:  # never fail the trial for a measurement
            self.disabled = True
            warnings.warn(f"searchsvc: dimensionality measurement failed and is off for the rest "
                          f"of this trial: {type(exc).__name__}: {exc}", stacklevel=2)

    def measure_now(self) -> None:
        """One measurement (of the probe, or of the pass just captured), timed into the
        budget; exceptions propagate."""
        started = self.clock()
        try:
            self._measure()
        finally:
            self._disarm()
            self.captured = {}
            self.spent += self.clock() - started

    def _due(self) -> bool:
        if self.disabled or (self.schedule.until is not None
                             and self.reports >= self.schedule.until):
            return False
        if self.measured == 0:  # the first pass, when watch() had no probe to measure
            return True
        if self.schedule.every is not None:
            return self.forwards - self.measured_at >= self.schedule.every
        training = self.clock() - self.started - self.spent
        cost = self.spent / max(1, self.measured)
        return self.spent + cost <= BUDGET_FRACTION * training

    def _measure(self) -> None:
        if self.probe is not None:
            self._run_probe()
        for name in self.layers:
            tensor = self.captured.get(name)
            if tensor is None:  # the layer took no part in this forward pass
                continue
            pr, sr = measure(tensor)
            self.pending[name] = {"participation_ratio": pr, "stable_rank": sr}
        self.measured += 1
        self.measured_at = self.forwards

    def _run_probe(self) -> None:
        self.measuring = True
        self._arm()
        try:
            _probe_pass(self.model, self.probe)
        finally:
            self.measuring = False

    def take(self) -> dict[str, Any]:
        """The measurements since the last report (then forgotten), as
        ``Measurement.dimensionality`` holds them; empty when none. Counts a report."""
        self.reports += 1
        if not self.pending:
            return {}
        taken, self.pending = self.pending, {}
        return {"source": self.source, "layers": taken}

    def close(self) -> None:
        self._disarm()
        for handle in self.handles:
            handle.remove()
        self.handles = []


def call_with(model: Any, probe: Any) -> Any:
    """``model(probe)``; a tuple probe is several positional inputs, a mapping keyword ones."""
    if isinstance(probe, tuple):
        return model(*probe)
    if isinstance(probe, Mapping):
        return model(**probe)
    return model(probe)


def _on_device(probe: Any, model: Any) -> Any:
    device = next((p.device for p in model.parameters()), None)
    if device is None:
        return probe
    if isinstance(probe, tuple):
        return tuple(p.to(device) for p in probe)
    if isinstance(probe, Mapping):
        return {k: v.to(device) for k, v in probe.items()}
    return probe.to(device)


def _shape(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ", ".join(_shape(v) for v in value)
    shape = getattr(value, "shape", None)
    return str(tuple(shape)) if shape is not None else type(value).__name__


def check_probe(model: Any, probe: Any, run: Callable[[], Any]) -> None:
    """``run()``, which passes ``probe`` through ``model``; when the model rejects it,
    ObjectiveError naming the layer that did and the shapes involved."""
    entered: list[tuple[str, Any, Any]] = []
    hooks = [module.register_forward_pre_hook(
        lambda m, inputs, name=name: entered.append((name, m, inputs)))
        for name, module in model.named_modules() if name]
    try:
        run()
    except Exception as exc:
        if not entered:
            raise ObjectiveError(f"sdk.watch: the model rejected the probe of shape "
                                 f"{_shape(probe)}: {type(exc).__name__}: {exc}") from None
        name, module, inputs = entered[-1]
        raise ObjectiveError(
            f"sdk.watch: the probe of shape {_shape(probe)} does not fit the model: layer "
            f"{name!r} ({module}) rejected its input of shape {_shape(inputs)}: "
            f"{type(exc).__name__}: {exc}") from None
    finally:
        for hook in hooks:
            hook.remove()


def _inner(model: Any) -> Any:
    """The model itself when DistributedDataParallel wraps it (a probe forward through the
    wrapper would run a collective on rank 0 alone)."""
    from torch.nn.parallel import DistributedDataParallel

    return model.module if isinstance(model, DistributedDataParallel) else model


def watch(model: Any, probe: Any = None, every: int | None = None,
          layers: Sequence[Any] | Mapping[str, Any] | None = None) -> Watcher | None:
    """Watch ``model``'s representation dimensionality for the rest of the trial (module
    docstring). ``every=None`` takes the study file's ``dimensionality.every`` (adaptive by
    default); ``until`` comes from the study file. Returns the watcher (None on a data-parallel
    trial's ranks other than 0, which do not measure)."""
    import torch.nn as nn

    if not isinstance(model, nn.Module):
        raise ObjectiveError(f"sdk.watch takes a torch.nn.Module, got {type(model).__name__}")
    context = current()
    settings = dict(context.dimensionality or {})
    schedule = schedule_from(settings.get("every", "auto") if every is None else every,
                             settings.get("until"), context.max_steps)
    model = _inner(model)
    chosen = pick_layers(model, layers)
    if (context.rank or 0) > 0:
        if probe is not None:  # the same clear error on every rank
            check_probe(model, probe, lambda: _probe_pass(model, probe))
        return None
    watcher = Watcher(model, probe, chosen, schedule)
    if probe is not None:  # the first measurement, of the model as built, checks the probe
        try:
            check_probe(model, probe, watcher.measure_now)
        except ObjectiveError:
            watcher.close()
            raise
    _watchers.append(watcher)
    return watcher


def _probe_pass(model: Any, probe: Any) -> None:
    import torch

    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            call_with(model, _on_device(probe, model))
    finally:
        model.train(was_training)


def take() -> dict[str, Any]:
    """The reporting trial's watched models' measurements since the last report (merged by
    layer name)."""
    merged: dict[str, Any] = {}
    trial = reporting_trial()
    for watcher in [w for w in _watchers if w.trial == trial]:
        found = watcher.take()
        if found:
            merged.setdefault("source", found["source"])
            merged.setdefault("layers", {}).update(found["layers"])
    return merged


def close_all() -> None:
    """Remove every watcher's hooks (the objective's run ended)."""
    while _watchers:
        _watchers.pop().close()


def close_trial(number: int) -> None:
    """Remove the hooks of trial ``number``'s watchers (it ended; Ray Tune may reuse this
    process, and the next trial may have started watching already)."""
    for watcher in [w for w in _watchers if w.trial == number]:
        _watchers.remove(watcher)
        watcher.close()
