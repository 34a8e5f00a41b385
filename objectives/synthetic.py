"""Synthetic objectives with known optima: fast, deterministic, no data.

- ``branin``: 2-D, global minimum 0.397887 at three points.
- ``hartmann6``: 6-D on [0, 1]^6, global minimum -3.32237.
- ``zdt1``: the two-objective ZDT1 problem on [0, 1]^n (both minimised): its Pareto front is
  f2 = 1 - sqrt(f1), reached where every x_i but the first is 0. Also reports ``memory_mb``,
  rising with x0, to put a constraint on.
- ``playbook``: a training-like toy with learning rate, weight decay and a scientific ``depth``
  whose effect is known: deeper is truly better, but only once its learning rate is tuned
  (deeper models need a smaller learning rate). Reports a curve per step like real training.
"""

from __future__ import annotations

import math
import random

from searchsvc import sdk

BRANIN_OPTIMUM = 0.397887
HARTMANN6_OPTIMUM = -3.32237


def branin_value(x1: float, x2: float) -> float:
    a, b, c = 1.0, 5.1 / (4 * math.pi**2), 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return a * (x2 - b * x1**2 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


def branin(config: dict) -> dict:
    """Config: x1 in [-5, 10], x2 in [0, 15]. Returns {"value": ...} (minimise)."""
    return {"value": branin_value(config["x1"], config["x2"])}


_H_ALPHA = (1.0, 1.2, 3.0, 3.2)
_H_A = (
    (10, 3, 17, 3.5, 1.7, 8),
    (0.05, 10, 17, 0.1, 8, 14),
    (3, 3.5, 1.7, 10, 17, 8),
    (17, 8, 0.05, 10, 0.1, 14),
)
_H_P = (
    (0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886),
    (0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991),
    (0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650),
    (0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381),
)


def hartmann6_value(x: list[float]) -> float:
    total = 0.0
    for alpha, a_row, p_row in zip(_H_ALPHA, _H_A, _H_P, strict=True):
        inner = sum(a * (xi - p) ** 2 for a, xi, p in zip(a_row, x, p_row, strict=True))
        total += alpha * math.exp(-inner)
    return -total


def hartmann6(config: dict) -> dict:
    """Config: x1..x6 in [0, 1]. Returns {"value": ...} (minimise)."""
    return {"value": hartmann6_value([config[f"x{i}"] for i in range(1, 7)])}


# The playbook toy's ground truth, used by tests and the report's planted-truth checks.
PLAYBOOK_FLOOR = {1: 0.30, 2: 0.22, 3: 0.17, 4: 0.16}  # best reachable loss per depth


def zdt1_values(x: list[float]) -> tuple[float, float]:
    f1 = x[0]
    g = 1 + 9 * sum(x[1:]) / max(len(x) - 1, 1)
    return f1, g * (1 - math.sqrt(f1 / g))


def zdt1(config: dict) -> dict:
    """Config: x0, x1, ... in [0, 1]. Returns f1, f2 (minimise both) and memory_mb."""
    x = [config[f"x{i}"] for i in range(sum(1 for k in config if k.startswith("x")))]
    f1, f2 = zdt1_values(x)
    return {"f1": f1, "f2": f2, "memory_mb": 1000 + 3000 * x[0]}


def playbook_best_lr(depth: int) -> float:
    """The learning rate that is best for ``depth`` (deeper needs smaller)."""
    return 10 ** (-1.0 - 0.5 * depth)


def playbook_final_loss(depth: int, learning_rate: float, weight_decay: float) -> float:
    lr_miss = math.log10(learning_rate) - math.log10(playbook_best_lr(depth))
    wd_miss = math.log10(weight_decay) + 4.0  # best weight decay: 1e-4
    return PLAYBOOK_FLOOR[depth] + 0.08 * lr_miss**2 + 0.02 * wd_miss**2


def playbook(config: dict) -> None:
    """A training-like run: reports train_loss, val_loss and val_error each step, converging
    towards :func:`playbook_final_loss`; diverges (NaN) when the learning rate is far too high."""
    depth = int(config.get("depth", 2))
    lr, wd = float(config["learning_rate"]), float(config.get("weight_decay", 1e-4))
    steps = sdk.max_steps(20)
    rng = random.Random(sdk.trial_context().seed)
    final = playbook_final_loss(depth, lr, wd)
    diverges = lr > 30 * playbook_best_lr(depth)
    for step in range(1, steps + 1):
        progress = 1 - math.exp(-4.0 * step / steps)
        val = 2.3 - (2.3 - final) * progress + rng.gauss(0, 0.003)
        if diverges and step > steps // 3:
            val = float("nan")
        sdk.report({"train_loss": val * 0.9, "val_loss": val, "val_error": val / 2.3})


# --- A population-based-training toy: the best learning rate drifts during training. -------

def pbt_toy_gain(learning_rate: float, step: int, max_steps: int) -> float:
    """Progress made at ``step``: best when log10(lr) is near a target that moves from -1 at
    the start to -2.5 at the end (high learning rate early, low late, as in real schedules)."""
    target = -1.0 - 1.5 * step / max_steps
    return math.exp(-(((math.log10(learning_rate) - target) / 0.5) ** 2))


def pbt_toy_fixed_score(learning_rate: float, max_steps: int) -> float:
    """The final score of a run that keeps one learning rate throughout."""
    return sum(pbt_toy_gain(learning_rate, t, max_steps) for t in range(1, max_steps + 1))


def pbt_toy(config: dict) -> None:
    """Accumulates :func:`pbt_toy_gain` per step into ``score`` (maximise); checkpoints its
    state every step and resumes from a checkpoint, so PBT can copy and perturb it."""
    steps = sdk.max_steps(20)
    state = sdk.restore() or {"score": 0.0, "step": 0}
    score, start = float(state["score"]), int(state["step"]) + 1
    for step in range(start, steps + 1):
        score += pbt_toy_gain(float(config["learning_rate"]), step, steps)
        sdk.report({"score": score, "learning_rate": float(config["learning_rate"])},
                   state=lambda score=score, step=step: {"score": score, "step": step})


# --- Planted seed noise: a known effect, a known trial-to-trial sigma. ---------------------

NOISY_SIGMA = 0.05  # sd of the final loss over seeds, for one config
NOISY_EFFECT = {"a": 0.0, "b": 0.3, "c": 0.0}  # b is worse by 6 sigma; a and c are equal


def noisy_true_loss(variant: str, x: float) -> float:
    """The loss a config reaches on average over seeds (the truth a study should find)."""
    return 1.0 + NOISY_EFFECT[variant] + 0.2 * (x - 0.5) ** 2


def noisy(config: dict) -> None:
    """Reports ``loss`` each step, converging to :func:`noisy_true_loss` plus a per-seed
    offset drawn with sd :data:`NOISY_SIGMA` (initialisation luck), so repeats of one config
    scatter with exactly that sigma. ``sleep_s`` (optional) slows each step for kill tests;
    ``checkpoint`` (optional) saves the step as the trial's checkpoint at every report and goes
    on from a restored one (a study that keeps checkpoints can then pause and resume it)."""
    import time

    steps = sdk.max_steps(3)
    rng = random.Random(sdk.trial_context().seed)
    final = noisy_true_loss(str(config["variant"]), float(config["x"])) + rng.gauss(
        0, NOISY_SIGMA)
    saves = bool(config.get("checkpoint", False))
    restored = sdk.restore() if saves else None
    for step in range(int(restored["step"]) + 1 if restored else 1, steps + 1):
        time.sleep(float(config.get("sleep_s", 0.0)))
        loss = final + 0.5 * math.exp(-3.0 * step / steps) - 0.5 * math.exp(-3.0)
        sdk.report({"loss": loss}, state=(lambda step=step: {"step": step}) if saves else None)
