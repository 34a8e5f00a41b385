"""Static plot files (PNG, matplotlib): the metric against every searched parameter."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from searchsvc.analysis.trials import arm_label
from searchsvc.spec import RangeParameter, StudySpec
from searchsvc.store import TRIAL_INFEASIBLE, TrialRecord


def axis_plots(spec: StudySpec, trials: Sequence[TrialRecord], folder: Path) -> list[Path]:
    """One PNG per searched parameter: each trial's best metric vs the parameter's value, one
    colour per scientific arm, infeasible trials as red crosses along the top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    feasible = [t.best_value for t in trials if t.best_value is not None]
    top = max(feasible) if feasible else 1.0
    for param in spec.parameters.values():
        if not param.searched:
            continue
        fig, ax = plt.subplots(figsize=(5, 3.4), dpi=110)
        arms: dict[str, list[tuple[object, float]]] = {}
        bad: list[object] = []
        for t in trials:
            if param.name not in t.config:
                continue
            x = t.config[param.name]
            if t.best_value is not None and math.isfinite(t.best_value):
                label = arm_label(t) or "trials"
                arms.setdefault(label, []).append((x, t.best_value))
            elif t.state == TRIAL_INFEASIBLE:
                bad.append(x)
        for label, points in arms.items():
            ax.scatter([p[0] for p in points], [p[1] for p in points], s=18, alpha=0.8,
                       label=label)
        if bad:
            ax.scatter(bad, [top] * len(bad), marker="x", color="red", label="infeasible (NaN)")
        if isinstance(param, RangeParameter) and param.scale == "log":
            ax.set_xscale("log")
        if isinstance(param, RangeParameter):
            ax.axvline(param.low, color="grey", lw=0.8, ls=":")
            ax.axvline(param.high, color="grey", lw=0.8, ls=":")
        ax.set_xlabel(f"{param.name} ({param.role})")
        ax.set_ylabel(f"best {spec.metric} ({spec.mode})")
        ax.set_title(f"{spec.metric} vs {param.name}", fontsize=10)
        if arms or bad:
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = folder / f"axis_{param.name}.png"
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)
    return paths
