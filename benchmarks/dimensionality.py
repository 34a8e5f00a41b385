"""Representation dimensionality: what ``sdk.watch`` costs, what it detects, and whether early
dimensionality predicts the result, over several seeds.

Everything runs in this process through :func:`searchsvc.sdk.run_locally` (the trial's worker
code, without Ray), with torch on one thread as a 1-CPU trial has it:

1. **Overhead**: the same training run without ``sdk.watch``, with it at the default (adaptive,
   on a fixed probe batch) and at ``every: 5``, on the digits MLP (2 x 128 units, 30 epochs) and
   on a CPU-sized ResNet (objectives/resnet_images.py, width 8, one block a stage, 2,048 images
   of 32 x 32, 4 epochs). The three variants run in rotated order per seed; the overhead is each
   variant's time over the unwatched run's, median over seeds: the process's CPU time (which
   other load on the machine barely moves; torch runs on one thread) and the wall time.
2. **Early signal**: a random-search study per seed (digits MLP: depth 1-3, width 4-256 log,
   learning rate 1e-4 to 1e-1 log, 12 trials of 8 epochs; ResNet: width 2-16, depth 1-2,
   learning rate 1e-3 to 3e-1 log, 8 trials of 4 epochs), analysed by the report's own code
   (``searchsvc.analysis.dimensionality``): the headline layer, Spearman rho, its 95% interval,
   n and whether early dimensionality predicts the result (val_error) in that study.
3. **Planted collapses**: per seed, the one-unit bottleneck against an 8-unit one and the
   network whose ReLUs are killed at step 4 against an untouched one
   (objectives/planted_dimensionality.py): detections and false alarms.

``stop_collapsed`` (stopping collapsed trials early) is not offered: no measurement here shows
it reaching a target sooner than ASHA alone, so it is not built on faith.

    .venv/bin/python benchmarks/dimensionality.py [--seeds 3] [--quick] [--json FILE]
        [--parts overhead,signal,planted] [--figure docs/dimensionality.png]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from objectives import planted_dimensionality, resnet_images, torch_digits  # noqa: E402
from searchsvc import sdk  # noqa: E402
from searchsvc.analysis.dimensionality import study_dimensionality  # noqa: E402
from searchsvc.core import Measurement, TrialRecord  # noqa: E402
from searchsvc.worker.context import DIMENSIONALITY_KEY  # noqa: E402

Objective = Callable[[dict[str, Any]], None]


# -- the training runs -------------------------------------------------------------------------

def digits_mlp(config: dict[str, Any]) -> None:
    """The digits MLP, watched as ``config["watch"]`` says (None: not watched)."""
    sdk.seed_everything()
    x_train, y_train, x_val, y_val = torch_digits.load_data()
    model = torch_digits.build_model({"num_layers": config.get("depth", 2),
                                      "hidden_units": config.get("width", 128)})
    # Named by role: a depth study's module paths differ between depths.
    _watch(model, x_val[:256], config, {"first": model[0], "last_hidden": model[-3],
                                        "head": model[-1]})
    optimizer = torch.optim.Adam(model.parameters(), lr=config.get("learning_rate", 1e-3))
    generator = torch.Generator().manual_seed(sdk.trial_context().seed)
    for _ in range(sdk.max_steps(10)):
        planted_dimensionality.train_epoch(model, optimizer, x_train, y_train, 32, generator)
        sdk.report({"val_error": _error(model, x_val, y_val)})


def small_resnet(config: dict[str, Any]) -> None:
    """The ResNet objective's model on a 2,048-image subset of its generated images."""
    sdk.seed_everything()
    train, val = _images()
    model = resnet_images.build_model(width=int(config.get("width", 8)),
                                      depth=int(config.get("depth", 1)))
    _watch(model, val[0][:128], config, {"stem": model[0], "last_block": model[-4],
                                         "head": model[-1]})
    optimizer = torch.optim.SGD(model.parameters(), lr=config.get("learning_rate", 0.05),
                                momentum=0.9)
    generator = torch.Generator().manual_seed(sdk.trial_context().seed)
    x_train, y_train = train
    for _ in range(sdk.max_steps(4)):
        planted_dimensionality.train_epoch(model, optimizer, x_train, y_train, 64, generator)
        sdk.report({"val_error": _error(model, *val)})


_IMAGES: dict[str, Any] = {}


def _images() -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    if not _IMAGES:
        data = resnet_images.GratingImages(2048 + 256, image_size=32, num_classes=10)
        items = [data[i] for i in range(len(data))]
        x = torch.stack([x for x, _ in items])
        y = torch.tensor([y for _, y in items])
        _IMAGES["train"], _IMAGES["val"] = (x[:2048], y[:2048]), (x[2048:], y[2048:])
    return _IMAGES["train"], _IMAGES["val"]


def _watch(model: nn.Module, probe: torch.Tensor, config: dict[str, Any],
           roles: dict[str, Any]) -> None:
    """Watch as ``config["watch"]`` says ("auto", N, or None: not at all): every Linear and
    Conv layer, or with ``config["by_role"]`` the layers ``roles`` names (a depth study's
    module paths differ between depths, its roles do not)."""
    how, layers = config.get("watch"), roles if config.get("by_role") else None
    WATCHED.clear()
    if how is not None:
        WATCHED.append(sdk.watch(model, probe=probe, every=None if how == "auto" else how,
                                 layers=layers))


WATCHED: list[Any] = []  # the last run's watcher, for its own account of the time it took


def measuring_share() -> float | None:
    """The last run's time spent measuring over its time since the watch began, by the
    watcher's own clock (what the adaptive spacing keeps at 5%)."""
    if not WATCHED or WATCHED[0] is None:
        return None
    watcher = WATCHED[0]
    return watcher.spent / (watcher.clock() - watcher.started)


def _error(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return float((model(x).argmax(1) != y).float().mean())


# -- 1. overhead ------------------------------------------------------------------------------

def overhead(objective: Objective, seeds: int, steps: int) -> dict[str, Any]:
    variants: list[Any] = [None, "auto", 5]
    for how in variants:  # warm up: data loaded and cached, code paths run once
        sdk.run_locally(objective, {"watch": how}, metric="val_error", max_steps=1)
    times: dict[str, list[float]] = {str(v): [] for v in variants}
    cpu: dict[str, list[float]] = {str(v): [] for v in variants}
    share: dict[str, list[float]] = {str(v): [] for v in variants}
    measured: dict[str, list[int]] = {str(v): [] for v in variants}
    for seed in range(seeds):
        for shift in range(len(variants)):
            how = variants[(seed + shift) % len(variants)]
            started, cpu_started = time.perf_counter(), time.process_time()
            reports = sdk.run_locally(objective, {"watch": how}, metric="val_error",
                                      max_steps=steps, seed=seed)
            times[str(how)].append(time.perf_counter() - started)
            cpu[str(how)].append(time.process_time() - cpu_started)
            found = measuring_share()
            if found is not None:
                share[str(how)].append(found)
            measured[str(how)].append(sum(DIMENSIONALITY_KEY in r for r in reports))
    def ratio(values: dict[str, list[float]], key: str) -> float:
        return statistics.median(t / u for t, u in zip(values[key], values["None"],
                                                        strict=True)) - 1

    return {"unwatched_s": statistics.median(times["None"]),
            "unwatched_cpu_s": statistics.median(cpu["None"]), **{
                name: {"median_s": statistics.median(times[key]),
                       "overhead": ratio(times, key), "cpu_overhead": ratio(cpu, key),
                       "measuring_share": statistics.median(share[key]),
                       "steps_measured": statistics.median(measured[key])}
                for name, key in (("default", "auto"), ("every_5", "5"))}}


# -- 2. early signal --------------------------------------------------------------------------

def record(number: int, config: dict[str, Any], reports: list[dict[str, Any]]) -> TrialRecord:
    """A finished trial as the store would give it back."""
    measurements = tuple(
        Measurement(step=i + 1, value=r["val_error"], metrics={"val_error": r["val_error"]},
                    dimensionality=r.get(DIMENSIONALITY_KEY, {}))
        for i, r in enumerate(reports))
    best = min(r["val_error"] for r in reports)
    return TrialRecord(id=number, study_id=0, number=number, state="completed", config=config,
                       arm={}, seed=number, best_value=best, last_step=len(reports),
                       measurements=measurements,
                       final_metrics={"val_error": reports[-1]["val_error"]})


def sample(rng: np.random.Generator, space: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {"watch": "auto", "by_role": True}
    for name, (low, high, kind) in space.items():
        if kind == "int":
            config[name] = int(rng.integers(low, high + 1))
        else:
            config[name] = float(math.exp(rng.uniform(math.log(low), math.log(high))))
            if kind == "log_int":
                config[name] = round(config[name])
    return config


def early_signal(objective: Objective, space: dict[str, Any], trials: int, steps: int,
                 seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    records = []
    for number in range(trials):
        config = sample(rng, space)
        reports = sdk.run_locally(objective, config, metric="val_error", max_steps=steps,
                                  seed=seed * 1000 + number)
        records.append(record(number, config, reports))
    analysis = study_dimensionality(records, "val_error", "min", seed=seed)
    assert analysis is not None
    found = analysis.as_dict()["early_signal"]
    return {"seed": seed, "layer": found["layer"], "spearman": found["spearman"],
            "ci": found["ci"], "n": found["n"], "predicts": found["predicts"],
            "best_error": min(r.best_value or 1.0 for r in records)}


DIGITS_SPACE = {"depth": (1, 3, "int"), "width": (4, 256, "log_int"),
                "learning_rate": (1e-4, 1e-1, "log")}
RESNET_SPACE = {"width": (2, 16, "log_int"), "depth": (1, 2, "int"),
                "learning_rate": (1e-3, 3e-1, "log")}


# -- 3. planted collapses ---------------------------------------------------------------------

def planted(seeds: int) -> dict[str, Any]:
    cases = [("bottleneck", planted_dimensionality.bottleneck, {"width": 1}, "low", True),
             ("bottleneck", planted_dimensionality.bottleneck, {"width": 8}, "low", False),
             ("collapsing", planted_dimensionality.collapsing, {"width": 64, "kill_at": 4},
              "fell", True),
             ("collapsing", planted_dimensionality.collapsing, {"width": 64, "kill_at": 0},
              "fell", False)]
    rows = []
    for name, objective, config, reason, planted_ in cases:
        flagged = 0
        for seed in range(seeds):
            reports = _collect(objective, config, seed)
            records = [record(0, config, [{**r, "val_error": r.get("val_error", 0.0)}
                                          for r in reports])]
            analysis = study_dimensionality(records, "val_error", "min", seed=seed,
                                            loss_metric="loss")
            assert analysis is not None
            flagged += any(c.reason == reason for c in analysis.collapsed)
        rows.append({"network": name, "config": config, "reason": reason, "planted": planted_,
                     "flagged": flagged, "seeds": seeds})
    return {"rows": rows}


def _collect(objective: Objective, config: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """Reports of a planted objective; ``collapsing`` reports through ``ray.tune.report``,
    routed here to ``sdk.report`` (no Ray session in this process)."""
    from ray import tune

    original = tune.report
    tune.report = lambda metrics, *a, **k: sdk.report(metrics)  # type: ignore[assignment]
    try:
        reports = sdk.run_locally(objective, config, metric="loss", max_steps=8, seed=seed)
    finally:
        tune.report = original
    return [{**r, "val_error": r.get("val_error", r["loss"])} for r in reports]


# -- the figure --------------------------------------------------------------------------------

def figure(path: Path) -> None:
    """Layer fc2's participation ratio and the training loss of a network whose ReLUs are
    killed at step 4 and of an untouched one (the docs' figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    for kill, label in ((0, "untouched"), (4, "ReLUs killed at step 4")):
        reports = _collect(planted_dimensionality.collapsing, {"width": 64, "kill_at": kill}, 0)
        steps = [i + 1 for i, r in enumerate(reports) if DIMENSIONALITY_KEY in r]
        left.plot(steps, [r[DIMENSIONALITY_KEY]["layers"]["fc2"]["participation_ratio"]
                          for r in reports if DIMENSIONALITY_KEY in r], marker="o", label=label)
        right.plot(range(1, len(reports) + 1), [r["loss"] for r in reports], marker="o",
                   label=label)
    left.axhline(2, color="grey", linestyle=":", label="low (2)")
    left.set(title="layer fc2: participation ratio", xlabel="step")
    right.set(title="training loss", xlabel="step")
    left.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# -- main --------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer epochs (a smoke run)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--figure", type=Path, default=None)
    parser.add_argument("--parts", default="overhead,signal,planted",
                        help="which of overhead, signal, planted to run")
    args = parser.parse_args()
    torch.set_num_threads(1)
    steps = {"mlp": 2 if args.quick else 10, "resnet": 1 if args.quick else 4}
    parts = set(args.parts.split(","))
    started = time.perf_counter()
    out: dict[str, Any] = {"seeds": args.seeds}
    if "overhead" in parts:
        out["overhead"] = {
            "digits_mlp": overhead(digits_mlp, args.seeds, 3 * steps["mlp"]),
            "resnet": overhead(small_resnet, args.seeds, steps["resnet"])}
    if "signal" in parts:
        out["early_signal"] = {
            "digits_mlp": [early_signal(digits_mlp, DIGITS_SPACE, 12,
                                        8 if not args.quick else 2, s)
                           for s in range(args.seeds)],
            "resnet": [early_signal(small_resnet, RESNET_SPACE, 8, steps["resnet"], s)
                       for s in range(args.seeds)]}
    if "planted" in parts:
        out["planted"] = planted(max(args.seeds, 5))
    out["wall_s"] = time.perf_counter() - started
    print(markdown(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    if args.figure:
        figure(args.figure)


def markdown(out: dict[str, Any]) -> str:
    lines = ["| model | unwatched: wall (s) / CPU (s) | default: CPU / wall overhead | "
             "measuring share | steps measured | every 5: CPU / wall overhead | measuring "
             "share | steps measured |", "|---|---|---|---|---|---|---|---|"]
    for name, o in out.get("overhead", {}).items():
        d, e = o["default"], o["every_5"]
        lines.append(f"| {name} | {o['unwatched_s']:.2f} / {o['unwatched_cpu_s']:.2f} | "
                     f"{d['cpu_overhead']:+.1%} / {d['overhead']:+.1%} | "
                     f"{d['measuring_share']:.1%} | {d['steps_measured']:g} | "
                     f"{e['cpu_overhead']:+.1%} / {e['overhead']:+.1%} | "
                     f"{e['measuring_share']:.1%} | {e['steps_measured']:g} |")
    lines += ["", "| study | seed | layer | Spearman | 95% CI | n | predicts |",
              "|---|---|---|---|---|---|---|"]
    for name, rows in out.get("early_signal", {}).items():
        for r in rows:
            ci = r["ci"] or [float("nan")] * 2
            rho = r["spearman"] if r["spearman"] is not None else float("nan")
            lines.append(f"| {name} | {r['seed']} | {r['layer']} | {rho:+.2f} | "
                         f"{ci[0]:+.2f} to {ci[1]:+.2f} | {r['n']} | {r['predicts']} |")
    lines += ["", "| network | config | planted | flagged as | flagged in |",
              "|---|---|---|---|---|"]
    for r in out.get("planted", {}).get("rows", []):
        lines.append(f"| {r['network']} | {r['config']} | {'yes' if r['planted'] else 'no'} | "
                     f"{r['reason']} | {r['flagged']} of {r['seeds']} seeds |")
    lines.append(f"\nwall time {out['wall_s']:.0f} s")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
