"""Interactive Plotly figures of a study's analysis, for the HTML report. Large studies are
downsampled so the page stays usable: at most MAX_POINTS trials per axis plot (WebGL past a few
thousand), at most MAX_LINES lines in the parallel-coordinates view, curves only for the best
trials."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.trials import arm_label, ranked
from searchsvc.spec import ChoiceParameter, RangeParameter, StudySpec
from searchsvc.store import TRIAL_INFEASIBLE, TrialRecord

WEBGL_FROM = 3000  # points per scatter above which WebGL draws them
MAX_POINTS = 4000  # trials per axis plot; the best quarter always among them
MAX_LINES = 2000  # parallel-coordinates lines (the best 500 always among them)
STATUS_COLOURS = {"ok": "#2a7", "near_low": "#d80", "near_high": "#d80",
                  "divergence_edge": "#c33"}
LAYOUT = dict(template="plotly_white", margin=dict(l=60, r=20, t=50, b=50), height=360,
              font=dict(size=12))


def axis_figures(spec: StudySpec, trials: Sequence[TrialRecord],
                 analysis: StudyAnalysis) -> list[tuple[str, go.Figure]]:
    """Metric (best over each trial's training) against every searched parameter, one point
    per trial and one colour per arm; diverged trials as red crosses along the top; the
    declared range's edges as dotted lines; the boundary verdict in the title."""
    checks = {c.parameter: c for c in analysis.boundaries}
    shown = shown_trials(spec, trials)
    note = "" if len(shown) == len(trials) else f" ({len(shown)} of {len(trials)} trials)"
    trials = shown
    finite = [t.best_value for t in trials if t.best_value is not None]
    worst = (max(finite) if spec.mode == "min" else min(finite)) if finite else 1.0
    out = []
    for param in spec.parameters.values():
        if not param.searched:
            continue
        fig = go.Figure()
        arms: dict[str, tuple[list[Any], list[float], list[str]]] = {}
        bad: tuple[list[Any], list[Any], list[str]] = ([], [], [])
        for t in trials:
            if param.name not in t.config:
                continue
            x = t.config[param.name]
            finite = t.best_value is not None and math.isfinite(t.best_value)
            if t.state == TRIAL_INFEASIBLE:  # at its best before diverging, else on top
                bad[0].append(x)
                bad[1].append(t.best_value if finite else worst)
                bad[2].append(f"trial {t.number} diverged")
            elif finite:
                xs, ys, text = arms.setdefault(arm_label(t) or "trials", ([], [], []))
                xs.append(x)
                ys.append(t.best_value)  # type: ignore[arg-type]
                text.append(f"trial {t.number} ({t.state})")
        scatter = go.Scattergl if len(trials) > WEBGL_FROM else go.Scatter
        for label, (xs, ys, text) in arms.items():
            fig.add_trace(scatter(x=xs, y=ys, text=text, mode="markers", name=label,
                                  marker=dict(size=6, opacity=0.75)))
        if bad[0]:
            fig.add_trace(scatter(x=bad[0], y=bad[1], text=bad[2],
                                  mode="markers", name="diverged (NaN/inf)",
                                  marker=dict(symbol="x", color="red", size=8)))
        title = f"{spec.metric} vs {param.name} ({param.role}){note}"
        if isinstance(param, RangeParameter):
            for edge in (param.low, param.high):
                fig.add_vline(x=edge, line_dash="dot", line_color="grey")
            if param.scale == "log":
                fig.update_xaxes(type="log")
            check = checks.get(param.name)
            if check is not None:
                colour = STATUS_COLOURS.get(check.status, "#333")
                title += f" — <span style='color:{colour}'>{check.status}</span>"
        fig.update_layout(title=title, xaxis_title=param.name,
                          yaxis_title=f"best {spec.metric}", **LAYOUT)
        out.append((f"axis-{param.name}", fig))
    return out


def shown_trials(spec: StudySpec, trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """Every trial, or past MAX_POINTS the best MAX_POINTS // 4 plus a seeded uniform sample
    of the rest: the front where decisions are made stays complete, the cloud stays light."""
    if len(trials) <= MAX_POINTS:
        return list(trials)
    top = ranked(trials, spec.mode)[:MAX_POINTS // 4]
    chosen = {t.number for t in top}
    rest = [t for t in trials if t.number not in chosen]
    sample = random.Random(0).sample(rest, MAX_POINTS - len(top))
    return sorted([*top, *sample], key=lambda t: t.number)


def isolation_figures(spec: StudySpec, analysis: StudyAnalysis) -> list[tuple[str, go.Figure]]:
    """Best metric per scientific value after optimising away the nuisance parameters, with
    the value's top trials as the spread."""
    out = []
    for iso in analysis.isolation:
        labels = [str(p.value) for p in iso.points]
        fig = go.Figure()
        fig.add_trace(go.Scatter(
            x=labels * 1, y=[p.best for p in iso.points], mode="markers+lines",
            name="best trial", marker=dict(size=11),
            text=[f"trial {p.trial_id}, {p.trials} trials" for p in iso.points]))
        spread_x = [lab for lab, p in zip(labels, iso.points, strict=True)
                    for _ in p.top_values]
        spread_y = [v for p in iso.points for v in p.top_values]
        fig.add_trace(go.Scatter(x=spread_x, y=spread_y, mode="markers", name="top trials",
                                 marker=dict(size=6, color="grey", opacity=0.6)))
        fig.update_layout(title=f"Isolation: {iso.parameter} — {iso.verdict}",
                          xaxis_title=iso.parameter, xaxis_type="category",
                          yaxis_title=f"best {spec.metric}", **LAYOUT)
        out.append((f"isolation-{iso.parameter}", fig))
    return out


def curve_figure(spec: StudySpec, trials: Sequence[TrialRecord],
                 analysis: StudyAnalysis) -> tuple[str, go.Figure] | None:
    """The training curves of the diagnosed best trials, best step marked, issues named."""
    by_number = {t.number: t for t in trials}
    fig = go.Figure()
    for diag in analysis.curves:
        t = by_number.get(diag.trial_id)
        if t is None:
            continue
        curve = t.curve(spec.metric)
        if not curve:
            continue
        issues = ", ".join(diag.issues) or "no issue"
        name = f"trial {t.number} {('(' + diag.arm + ')') if diag.arm else ''}: {issues}"
        fig.add_trace(go.Scatter(x=[s for s, _ in curve], y=[v for _, v in curve],
                                 mode="lines", name=name))
        if diag.best_step is not None:
            best = next(v for s, v in curve if s == diag.best_step)
            fig.add_trace(go.Scatter(x=[diag.best_step], y=[best], mode="markers",
                                     showlegend=False, marker=dict(symbol="star", size=11),
                                     hovertext=f"trial {t.number}: best step {diag.best_step}"))
    if not fig.data:
        return None
    fig.update_layout(title=f"Training curves of the best trials ({spec.metric})",
                      xaxis_title="step", yaxis_title=spec.metric,
                      **{**LAYOUT, "height": 420})
    return "curves", fig


def importance_figure(analysis: StudyAnalysis) -> tuple[str, go.Figure] | None:
    if not analysis.importance:
        return None
    items = sorted(analysis.importance.items(), key=lambda kv: kv[1])
    fig = go.Figure(go.Bar(x=[v for _, v in items], y=[k for k, _ in items], orientation="h",
                           text=[f"{v:.0%}" for _, v in items], textposition="auto"))
    fig.update_layout(title="Parameter importance (fANOVA share of variance)",
                      xaxis_tickformat=".0%", **{**LAYOUT, "height": 120 + 40 * len(items)})
    return "importance", fig


def parallel_figure(spec: StudySpec, trials: Sequence[TrialRecord]
                    ) -> tuple[str, go.Figure] | None:
    """Parallel coordinates over the searched parameters (log ranges as log10), coloured by
    the metric; at most MAX_LINES trials, the best 500 always included."""
    usable = ranked(trials, spec.mode)
    if len(usable) < 2:
        return None
    if len(usable) > MAX_LINES:
        rest = usable[500:]
        usable = usable[:500] + random.Random(0).sample(rest, MAX_LINES - 500)
    dims = []
    for param in spec.parameters.values():
        if not param.searched or not all(param.name in t.config for t in usable):
            continue
        values = [t.config[param.name] for t in usable]
        if isinstance(param, RangeParameter):
            log = param.scale == "log"
            dims.append(dict(label=f"log10 {param.name}" if log else param.name,
                             values=[math.log10(v) if log else v for v in values]))
        elif isinstance(param, ChoiceParameter):
            codes = {v: i for i, v in enumerate(param.values)}
            dims.append(dict(label=param.name, values=[codes.get(v, 0) for v in values],
                             tickvals=list(codes.values()), ticktext=[str(v) for v in codes]))
    if not dims:
        return None
    metric = [float(t.best_value) for t in usable]  # type: ignore[arg-type]
    dims.append(dict(label=spec.metric, values=metric))
    fig = go.Figure(go.Parcoords(
        line=dict(color=metric, colorscale="Viridis", showscale=True,
                  reversescale=spec.mode == "min"), dimensions=dims))
    fig.update_layout(title="Parallel coordinates (brush an axis to filter)",
                      **{**LAYOUT, "height": 420, "margin": dict(l=80, r=40, t=80, b=40)})
    return "parallel", fig


def rung_figure(analysis: StudyAnalysis) -> tuple[str, go.Figure] | None:
    """Hyperband/ASHA: how many trials reached each rung and how many were stopped there."""
    if not analysis.rungs:
        return None
    steps = [str(r.step) for r in analysis.rungs]
    fig = go.Figure([
        go.Bar(x=steps, y=[r.reached for r in analysis.rungs], name="reached this step"),
        go.Bar(x=steps, y=[len(r.stopped) for r in analysis.rungs], name="stopped here",
               text=[", ".join(map(str, r.stopped[:12])) for r in analysis.rungs],
               hovertemplate="stopped: %{text}<extra></extra>"),
    ])
    fig.update_layout(title="Early stopping: trials stopped at each rung", barmode="group",
                      xaxis_title="rung (step)", yaxis_title="trials", **LAYOUT)
    return "rungs", fig


def lineage_figure(trials: Sequence[TrialRecord], analysis: StudyAnalysis
                   ) -> tuple[str, go.Figure] | None:
    """PBT: each trial a horizontal line over its steps; an arrow from the parent's step to
    the child wherever the child copied the parent's weights and perturbed its config."""
    if not analysis.lineage:
        return None
    fig = go.Figure()
    for t in trials:
        fig.add_trace(go.Scatter(x=[0, t.last_step or 0], y=[t.number, t.number], mode="lines",
                                 line=dict(color="#bbb"), showlegend=False,
                                 hovertext=f"trial {t.number}"))
    xs: list[Any] = []
    ys: list[Any] = []
    text = []
    for e in analysis.lineage:
        if e.parent is None or e.step is None:
            continue
        xs += [e.parent_step if e.parent_step is not None else e.step, e.step, None]
        ys += [e.parent, e.trial_id, None]
        change = ", ".join(f"{k}: {_short(a)}→{_short(b)}" for k, (a, b) in e.changes.items())
        text += ["", f"trial {e.trial_id} copied trial {e.parent} at step {e.step}; {change}",
                 ""]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name="exploit (parent → child)",
                             hovertext=text, marker=dict(symbol="arrow", angleref="previous",
                                                         size=10)))
    fig.update_layout(title="PBT lineage", xaxis_title="step", yaxis_title="trial",
                      **{**LAYOUT, "height": 160 + 22 * len(trials)})
    return "lineage", fig


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
