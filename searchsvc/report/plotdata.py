"""What every report plot shows, computed once and drawn by both renderers: Plotly
(``figures.py``, for report.html) and matplotlib (``plots.py``, the PNGs of report.md).

Pure functions from trials and analysis to small frozen dataclasses: which trials are drawn,
where infeasible ones sit, axis scales, labels and titles are decided here and nowhere else, so
the two renderers cannot disagree and the decisions are tested without drawing anything. No
plotting library is imported here.

Large studies are downsampled so the plots stay usable: at most MAX_POINTS trials per axis plot
(the best quarter always among them), at most MAX_LINES lines in the parallel-coordinates view
(the best KEEP_LINES always among them); curves only for the diagnosed best trials.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from searchsvc.analysis import BoundaryCheck, StudyAnalysis
from searchsvc.analysis.campaign import Campaign, Round
from searchsvc.analysis.replay import Replay
from searchsvc.analysis.telemetry import INPUT_BOUND_FRACTION, StudyTelemetry
from searchsvc.analysis.trials import arm_label
from searchsvc.core import Curve, StudyRecord, TrialRecord, TrialState, improves, is_finite_number
from searchsvc.core.direction import direction
from searchsvc.core.judging import by_value, is_best_candidate
from searchsvc.spec import ChoiceParameter, RangeParameter, StudySpec

MAX_POINTS = 4000  # trials per axis plot; the best quarter always among them
MAX_LINES = 2000  # parallel-coordinates lines
KEEP_LINES = 500  # the best lines, always among MAX_LINES
SAMPLE_SEED = 0  # downsampling is seeded: the same study gives the same plots every time
NO_VALUE_HEIGHT = 1.0  # where infeasible trials sit when no trial has a finite value
INFEASIBLE_NAME = "diverged (NaN/inf)"


@dataclass(frozen=True)
class Series:
    """Points drawn together under one legend entry; ``text[i]`` describes point i (hover)."""

    name: str
    x: tuple[Any, ...]
    y: tuple[float, ...]
    text: tuple[str, ...]


@dataclass(frozen=True)
class AxisPlot:
    """A trial's best metric against one searched parameter: one series per scientific arm,
    infeasible (diverged) trials as a series apart, each at its best finite value before it
    diverged, or, with none, at the worst edge of the plotted values (``worst_edge``: the
    lowest for ``max``, the highest for ``min``), never at a height that reads as good."""

    key: str  # "axis-<parameter>": the HTML element's id; the PNG is axis_<parameter>.png
    parameter: str
    title: str  # plain text; the boundary verdict is ``status``, drawn by each renderer
    x_label: str
    y_label: str
    x_log: bool
    edges: tuple[float, float] | None  # the declared range of a range parameter
    status: str | None  # the boundary check's verdict (ok, near_low, ...), if any
    arms: tuple[Series, ...]
    infeasible: Series | None
    shown: int  # trials drawn after downsampling (of ``total``)
    total: int


@dataclass(frozen=True)
class IsolationPlot:
    """Best metric per scientific value (categorical x) after optimising away the nuisance
    parameters, with each value's top trials as the spread."""

    key: str
    parameter: str
    title: str
    x_label: str
    y_label: str
    best: Series
    spread: Series
    # With seed repeats: each value's best configuration's mean with its 95% interval.
    means: Series | None = None
    ci_low: tuple[float, ...] = ()
    ci_high: tuple[float, ...] = ()


@dataclass(frozen=True)
class CurveLine:
    """One trial's training curve; ``best`` is its best step and value, when on the curve."""

    name: str
    steps: tuple[int, ...]
    values: tuple[float, ...]
    best: tuple[int, float] | None
    best_text: str
    # The trial's seed repeats, step by step: mean -/+ one standard deviation (None: fewer
    # than two repeats with curves).
    band: tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...]] | None = None


@dataclass(frozen=True)
class CurvePlot:
    key: str
    title: str
    x_label: str
    y_label: str
    lines: tuple[CurveLine, ...]


@dataclass(frozen=True)
class ParetoPlot:
    """The first two objectives against each other: each arm's feasible trials, its front as
    a step line through them, and infeasible trials (a constraint violated) apart."""

    key: str
    title: str
    x_label: str
    y_label: str
    arms: tuple[Series, ...]
    fronts: tuple[Series, ...]  # one per arm, sorted along x
    infeasible: Series | None


@dataclass(frozen=True)
class HypervolumePlot:
    """The hypervolume of the feasible front after each finished trial."""

    key: str
    title: str
    trials: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class ProgressPlot:
    """A study's trials in the order they ended, each one's best value, and the study's best
    (core.judging: search trials that completed or were pruned within the constraints) as each
    ended: what the web UI shows while a study runs."""

    metric: str
    order: tuple[int, ...]  # 1, 2, ...: trials finished
    values: tuple[float, ...]
    labels: tuple[str, ...]  # "trial N (state)"
    best_so_far: tuple[float | None, ...]


@dataclass(frozen=True)
class BarPlot:
    """Horizontal bars: ``values[i]`` (a fraction) for ``labels[i]``, smallest first."""

    key: str
    title: str
    labels: tuple[str, ...]
    values: tuple[float, ...]
    text: tuple[str, ...]


@dataclass(frozen=True)
class Dimension:
    """One parallel-coordinates axis; a choice parameter's values are coded 0..n-1 and named
    by ``tick_values``/``tick_text``."""

    label: str
    values: tuple[float, ...]
    tick_values: tuple[int, ...] | None = None
    tick_text: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ParallelPlot:
    """One line per trial across ``dimensions`` (the last one is the metric), coloured by
    ``colour`` (the metric), the colour scale reversed when lower is better."""

    key: str
    title: str
    dimensions: tuple[Dimension, ...]
    colour: tuple[float, ...]
    lower_is_better: bool


@dataclass(frozen=True)
class RungPlot:
    """Per rung (step, as a category): trials that reached it and trials stopped there."""

    key: str
    title: str
    x_label: str
    y_label: str
    steps: tuple[str, ...]
    reached: tuple[int, ...]
    stopped: tuple[int, ...]
    stopped_text: tuple[str, ...]


@dataclass(frozen=True)
class ReplayPlot:
    """Each replayed early-stopping setting: the share of steps it saves (x) against the best
    value the study would have ended with (y), apart by whether it keeps the top trials."""

    key: str
    title: str
    x_label: str
    y_label: str
    kept: Series  # settings that keep every top trial
    lost: Series  # settings that stop one of them
    full_best: float | None  # the study's own best (every curve to its end)
    recommended: str | None  # the recommended setting's label


@dataclass(frozen=True)
class CampaignPlot:
    """A campaign's best value per round, with the seed noise as an error bar (0: not
    measured) and each round's decisions as its label."""

    key: str
    title: str
    x_label: str
    y_label: str
    rounds: tuple[int, ...]
    best: tuple[float, ...]
    noise: tuple[float, ...]
    labels: tuple[str, ...]  # "camp-next: 2 decisions (range, early_stopping)"


@dataclass(frozen=True)
class Arrow:
    """A PBT exploit: the child copied the parent's weights at the parent's step."""

    parent: int
    parent_step: int
    child: int
    step: int
    text: str


@dataclass(frozen=True)
class LineagePlot:
    """Every trial as a line from step 0 to its last step, and the exploits between them."""

    key: str
    title: str
    x_label: str
    y_label: str
    lifetimes: tuple[tuple[int, int], ...]  # (trial number, last step)
    arrows: tuple[Arrow, ...]


@dataclass(frozen=True)
class TelemetryBar:
    """One trial's mean step time and the share of it spent waiting for data (None: not
    measured)."""

    trial: str
    step_time_s: float
    data_wait: float | None


@dataclass(frozen=True)
class TelemetryPlot:
    """Per trial with telemetry: its mean step time, and its data-wait fraction against the
    input-bound threshold."""

    key: str
    title: str
    bars: tuple[TelemetryBar, ...]
    threshold: float  # the data-wait fraction above which a trial is input-bound


@dataclass(frozen=True)
class ReportPlots:
    """Every plot of one report, by section (the section's key: its plot data, in the order
    it draws them; empty where the study has nothing to show)."""

    sections: Mapping[str, tuple[Any, ...]]

    def of(self, key: str) -> tuple[Any, ...]:
        """The plot data of the section ``key`` (empty: none, or no such section)."""
        return self.sections.get(key, ())


def telemetry_plot(telemetry: StudyTelemetry | None) -> TelemetryPlot | None:
    """The trials whose mean step time was measured (None: no such trial)."""
    shown = [t for t in (telemetry.trials if telemetry else ()) if t.step_time_mean_s is not None]
    if not shown:
        return None
    return TelemetryPlot(
        key="telemetry", title="Step time and data wait per trial",
        bars=tuple(TelemetryBar(str(t.number), float(t.step_time_mean_s),  # type: ignore[arg-type]
                                t.data_wait_fraction) for t in shown),
        threshold=INPUT_BOUND_FRACTION)


DIMENSIONALITY_BEST = 5  # the best trials drawn in each layer's dimensionality plot


def dimensionality_plots(spec: StudySpec, search: Sequence[TrialRecord],
                         analysis: StudyAnalysis) -> tuple[CurvePlot, ...]:
    """Each watched layer's participation ratio over the steps of the best search trials and
    of every collapsed trial (named so), one plot per layer."""
    dims = analysis.dimensionality
    if dims is None:
        return ()
    collapsed = dims.collapsed_numbers()
    best = [t.number for t in by_value(search, spec.mode)[:DIMENSIONALITY_BEST]]
    shown = list(dict.fromkeys([*best, *sorted(collapsed)]))
    layers = list(dict.fromkeys(name for t in dims.trials for name in t.layers))
    plots = []
    for index, layer in enumerate(layers):
        lines = []
        for number in shown:
            points = dims.curves(number).get(layer)
            if not points:
                continue
            what = "collapsed" if number in collapsed else f"best #{best.index(number) + 1}"
            lines.append(CurveLine(name=f"trial {number} ({what})",
                                   steps=tuple(s for s, _ in points),
                                   values=tuple(v for _, v in points), best=None, best_text=""))
        if lines:
            plots.append(CurvePlot(
                key=f"dimensionality-{index}",
                title=f"Layer {layer!r}: participation ratio of its activations",
                x_label="step", y_label="participation ratio", lines=tuple(lines)))
    return tuple(plots)


def pareto_plot(analysis: StudyAnalysis) -> ParetoPlot | None:
    """The front of a study with two or more objectives (the first two are drawn)."""
    pareto = analysis.objectives
    if pareto is None or len(pareto.objectives) < 2 or not pareto.points:
        return None
    first, second = pareto.objectives[0], pareto.objectives[1]

    def series(name: str, points: Sequence[Any]) -> Series:
        return Series(name, tuple(p.values[0] for p in points), tuple(p.values[1] for p in points),
                      tuple(f"trial {p.number}" + (f" ({p.arm})" if p.arm else "")
                            for p in points))

    arms: dict[str, list[Any]] = {}
    for p in pareto.points:
        if p.feasible:
            arms.setdefault(p.arm, []).append(p)
    by_number = {p.number: p for p in pareto.points}
    fronts = tuple(series(f"{arm or 'all'}: front",
                          sorted((by_number[n] for n in pareto.arm_fronts.get(arm, ())),
                                 key=lambda p: p.values[0]))
                   for arm in arms)
    bad = [p for p in pareto.points if not p.feasible]
    return ParetoPlot(
        key="pareto", title=f"Pareto front: {first.name} ({first.mode}) against "
        f"{second.name} ({second.mode})", x_label=first.name, y_label=second.name,
        arms=tuple(series(arm or "trials", points) for arm, points in arms.items()),
        fronts=fronts,
        infeasible=series("infeasible (a constraint violated)", bad) if bad else None)


def hypervolume_plot(analysis: StudyAnalysis) -> HypervolumePlot | None:
    pareto = analysis.objectives
    if pareto is None or len(pareto.objectives) < 2 or not pareto.hypervolume:
        return None
    return HypervolumePlot(key="hypervolume", title="Hypervolume of the feasible front",
                           trials=tuple(n for n, _ in pareto.hypervolume),
                           values=tuple(v for _, v in pareto.hypervolume))


def axis_plots(spec: StudySpec, trials: Sequence[TrialRecord],
               boundaries: Sequence[BoundaryCheck] = ()) -> tuple[AxisPlot, ...]:
    """One AxisPlot per searched parameter, in the file's order, over ``shown_trials``."""
    checks = {c.parameter: c for c in boundaries}
    shown = shown_trials(spec, trials)
    note = "" if len(shown) == len(trials) else f" ({len(shown)} of {len(trials)} trials)"
    worst = worst_edge([t.best_value for t in shown], spec.mode)
    plots = []
    for param in spec.parameters.values():
        if not param.searched:
            continue
        arms: dict[str, tuple[list[Any], list[float], list[str]]] = {}
        bad: tuple[list[Any], list[float], list[str]] = ([], [], [])
        for t in shown:
            if param.name not in t.config:
                continue  # a conditional parameter this trial did not use
            x = t.config[param.name]
            value = _finite(t.best_value)
            if t.state == TrialState.INFEASIBLE:
                bad[0].append(x)
                bad[1].append(worst if value is None else value)
                bad[2].append(f"trial {t.number} diverged")
            elif value is not None:
                xs, ys, text = arms.setdefault(arm_label(t) or "trials", ([], [], []))
                xs.append(x)
                ys.append(value)
                text.append(f"trial {t.number} ({t.state})")
        x_log, edges, status = False, None, None
        if isinstance(param, RangeParameter):
            x_log, edges = param.scale == "log", (param.low, param.high)
            check = checks.get(param.name)
            status = check.status if check is not None else None
        plots.append(AxisPlot(
            key=f"axis-{param.name}", parameter=param.name,
            title=f"{spec.metric} vs {param.name} ({param.role}){note}",
            x_label=param.name, y_label=f"best {spec.metric} ({spec.mode})",
            x_log=x_log, edges=edges, status=status,
            arms=tuple(Series(label, tuple(xs), tuple(ys), tuple(text))
                       for label, (xs, ys, text) in arms.items()),
            infeasible=(Series(INFEASIBLE_NAME, tuple(bad[0]), tuple(bad[1]), tuple(bad[2]))
                        if bad[0] else None),
            shown=len(shown), total=len(trials)))
    return tuple(plots)


def worst_edge(values: Sequence[float | None], mode: str) -> float:
    """The worst finite value in ``mode`` (the largest for ``min``, the smallest for ``max``):
    where an infeasible trial with no finite value is drawn, so that it never looks good."""
    finite = [v for v in map(_finite, values) if v is not None]
    if not finite:
        return NO_VALUE_HEIGHT
    return direction(mode).worst(finite)


def shown_trials(spec: StudySpec, trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """Every trial, or past MAX_POINTS the best MAX_POINTS // 4 plus a seeded uniform sample
    of the rest, in trial order: the front where decisions are made stays complete, the cloud
    stays light."""
    if len(trials) <= MAX_POINTS:
        return list(trials)
    top = by_value(trials, spec.mode)[:MAX_POINTS // 4]
    chosen = {t.number for t in top}
    rest = [t for t in trials if t.number not in chosen]
    sample = random.Random(SAMPLE_SEED).sample(rest, MAX_POINTS - len(top))
    return sorted([*top, *sample], key=lambda t: t.number)


def isolation_plots(spec: StudySpec, analysis: StudyAnalysis) -> tuple[IsolationPlot, ...]:
    """One IsolationPlot per isolated scientific parameter."""
    plots = []
    for iso in analysis.isolation:
        labels = tuple(str(p.value) for p in iso.points)
        # Each value's best over the trials that reached the full budget (a value none of
        # whose trials did has no point), with how many early stopping stopped.
        reached = [(label, p) for label, p in zip(labels, iso.points, strict=True)
                   if p.best is not None]
        best = Series("best trial", tuple(label for label, _ in reached),
                      tuple(float(p.best) for _, p in reached),  # type: ignore[arg-type]
                      tuple(f"trial {p.number}, {p.trials} trials"
                            + (f" ({p.stopped} more stopped early)" if p.stopped else "")
                            for _, p in reached))
        spread_x = tuple(label for label, p in zip(labels, iso.points, strict=True)
                         for _ in p.top_values)
        spread_y = tuple(v for p in iso.points for v in p.top_values)
        spread = Series("top trials", spread_x, spread_y, ("",) * len(spread_x))
        judged = [(label, p) for label, p in zip(labels, iso.points, strict=True)
                  if p.mean is not None and p.ci_low is not None and p.ci_high is not None]
        means = Series("mean over seed repeats (95% interval)",
                       tuple(label for label, _ in judged),
                       tuple(float(p.mean) for _, p in judged),  # type: ignore[arg-type]
                       tuple(f"trial {p.repeat_of}'s config, {p.repeats} seeds"
                             for _, p in judged)) if judged else None
        plots.append(IsolationPlot(
            key=f"isolation-{iso.parameter}", parameter=iso.parameter,
            title=f"Isolation: {iso.parameter} — {iso.verdict}", x_label=iso.parameter,
            y_label=f"best {spec.metric}", best=best, spread=spread, means=means,
            ci_low=tuple(float(p.ci_low) for _, p in judged),  # type: ignore[arg-type]
            ci_high=tuple(float(p.ci_high) for _, p in judged)))  # type: ignore[arg-type]
    return tuple(plots)


def curve_plot(spec: StudySpec, trials: Sequence[TrialRecord],
               analysis: StudyAnalysis) -> CurvePlot | None:
    """The training curves of the diagnosed best trials, issues named (None: no curve)."""
    by_number = {t.number: t for t in trials}
    lines = []
    for diag in analysis.curves:
        t = by_number.get(diag.number)
        if t is None:
            continue
        curve = t.curve(spec.metric)
        if not curve:
            continue
        issues = ", ".join(diag.issues) or "no issue"
        arm = f"({diag.arm})" if diag.arm else ""
        # The diagnosed best step may be off this attempt's curve: then no marker, no error.
        best = next(((s, v) for s, v in curve if s == diag.best_step), None)
        repeats = [r.curve(spec.metric) for r in trials if r.repeat_of == t.number]
        lines.append(CurveLine(
            name=f"trial {t.number} {arm}: {issues}",
            steps=tuple(s for s, _ in curve), values=tuple(v for _, v in curve), best=best,
            best_text=f"trial {t.number}: best step {diag.best_step}",
            band=noise_band([r for r in repeats if r])))
    if not lines:
        return None
    return CurvePlot(key="curves", title=f"Training curves of the best trials ({spec.metric})",
                     x_label="step", y_label=spec.metric, lines=tuple(lines))


def importance_plot(analysis: StudyAnalysis) -> BarPlot | None:
    """Each parameter's share of the metric's variance (fANOVA), smallest first."""
    if not analysis.importance:
        return None
    items = sorted(analysis.importance.items(), key=lambda kv: kv[1])
    return BarPlot(key="importance", title="Parameter importance (fANOVA share of variance)",
                   labels=tuple(k for k, _ in items), values=tuple(v for _, v in items),
                   text=tuple(f"{v:.0%}" for _, v in items))


def parallel_plot(spec: StudySpec, trials: Sequence[TrialRecord]) -> ParallelPlot | None:
    """Parallel coordinates over the searched parameters (log ranges as log10) and the metric;
    at most MAX_LINES trials, the best KEEP_LINES always included (None: fewer than two ranked
    trials, or no parameter every drawn trial has)."""
    usable = by_value(trials, spec.mode)
    if len(usable) < 2:
        return None
    if len(usable) > MAX_LINES:
        rest = usable[KEEP_LINES:]
        usable = usable[:KEEP_LINES] + random.Random(SAMPLE_SEED).sample(
            rest, MAX_LINES - KEEP_LINES)
    dims = []
    for param in spec.parameters.values():
        if not param.searched or not all(param.name in t.config for t in usable):
            continue
        values = [t.config[param.name] for t in usable]
        if isinstance(param, RangeParameter):
            log = param.scale == "log"
            dims.append(Dimension(f"log10 {param.name}" if log else param.name,
                                  tuple(math.log10(v) if log else v for v in values)))
        elif isinstance(param, ChoiceParameter):
            codes = {v: i for i, v in enumerate(param.values)}
            dims.append(Dimension(param.name, tuple(codes.get(v, 0) for v in values),
                                  tuple(codes.values()), tuple(str(v) for v in codes)))
    if not dims:
        return None
    metric = tuple(t.best_value for t in usable if t.best_value is not None)  # all: ranked
    dims.append(Dimension(spec.metric, metric))
    return ParallelPlot(key="parallel", title="Parallel coordinates (brush an axis to filter)",
                        dimensions=tuple(dims), colour=metric,
                        lower_is_better=direction(spec.mode).lower_is_better)


def rung_plot(analysis: StudyAnalysis) -> RungPlot | None:
    """Hyperband/ASHA: how many trials reached each rung and which were stopped there."""
    if not analysis.rungs:
        return None
    rungs = analysis.rungs
    return RungPlot(key="rungs", title="Early stopping: trials stopped at each rung",
                    x_label="rung (step)", y_label="trials",
                    steps=tuple(str(r.step) for r in rungs),
                    reached=tuple(r.reached for r in rungs),
                    stopped=tuple(len(r.stopped) for r in rungs),
                    stopped_text=tuple(", ".join(map(str, r.stopped[:12])) for r in rungs))


def replay_plot(replay: Replay | None) -> ReplayPlot | None:
    """The early-stopping replay: saving against the best value, per setting."""
    if replay is None:
        return None

    def series(name: str, keeps: bool) -> Series:
        chosen = [s for s in replay.settings if s.keeps_best == keeps and s.best_value is not None]
        return Series(name, tuple(100 * s.step_saving for s in chosen),
                      tuple(float(s.best_value) for s in chosen),  # type: ignore[arg-type]
                      tuple(s.rule.label for s in chosen))

    return ReplayPlot(
        key="replay", title="Early stopping replayed: steps saved against the best value kept",
        x_label="steps saved (%)", y_label=f"best {replay.metric}",
        kept=series("keeps the best within noise", True),
        lost=series("loses the best", False), full_best=replay.best_value,
        recommended=replay.recommended.rule.label if replay.recommended else None)


def campaign_plot(campaign: Campaign) -> CampaignPlot | None:
    """The campaign's rounds that have a best value (None: none has)."""
    done = [r for r in campaign.rounds if r.best_value is not None]
    if not done:
        return None

    def label(r: Round) -> str:
        kinds = ", ".join(dict.fromkeys(d.kind for d in r.decisions))
        return f"{r.study}" + (f": {kinds}" if kinds else "")

    return CampaignPlot(
        key="campaign", title=f"Campaign {campaign.name}: best per round",
        x_label="round", y_label=f"best {done[0].metric}",
        rounds=tuple(r.round for r in done), best=tuple(float(r.best_value) for r in done),  # type: ignore[arg-type]
        noise=tuple(r.noise or 0.0 for r in done), labels=tuple(label(r) for r in done))


def lineage_plot(trials: Sequence[TrialRecord], analysis: StudyAnalysis) -> LineagePlot | None:
    """PBT: each trial's lifetime, and an arrow from the parent's step to the child wherever
    the child copied the parent's weights and perturbed its config."""
    if not analysis.lineage:
        return None
    arrows = []
    for e in analysis.lineage:
        if e.parent is None or e.step is None:
            continue
        change = ", ".join(f"{k}: {_short(a)}→{_short(b)}" for k, (a, b) in e.changes.items())
        arrows.append(Arrow(
            parent=e.parent, parent_step=e.parent_step if e.parent_step is not None else e.step,
            child=e.number, step=e.step,
            text=f"trial {e.number} copied trial {e.parent} at step {e.step}; {change}"))
    return LineagePlot(key="lineage", title="PBT lineage", x_label="step", y_label="trial",
                       lifetimes=tuple((t.number, t.last_step or 0) for t in trials),
                       arrows=tuple(arrows))


def _finite(value: float | None) -> float | None:
    """``value`` as a float when it is a finite number, else None."""
    if value is None or not is_finite_number(value):
        return None
    return float(value)


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def noise_band(curves: Sequence[Curve]) -> tuple[tuple[int, ...], tuple[float, ...],
                                                  tuple[float, ...]] | None:
    """Mean -/+ one standard deviation over ``curves`` at every step all of them reached."""
    if len(curves) < 2:
        return None
    steps = sorted(set.intersection(*(set(s for s, _ in c) for c in curves)))
    lows, highs = [], []
    for step in steps:
        values = [c.value_at(step) for c in curves]
        mean = statistics.fmean(v for v in values if v is not None)
        sd = statistics.stdev(v for v in values if v is not None)
        lows.append(mean - sd)
        highs.append(mean + sd)
    return (tuple(steps), tuple(lows), tuple(highs)) if steps else None


def progress_plot(study: StudyRecord, trials: Sequence[TrialRecord]) -> ProgressPlot | None:
    """The finished trials with a finite value, in the order they ended (None: none yet)."""
    done = sorted((t for t in trials if t.finished_at is not None
                   and is_finite_number(t.best_value)), key=lambda t: t.finished_at or 0)
    if not done:
        return None
    best: list[float | None] = []
    for t in done:
        previous = best[-1] if best else None
        better = (is_best_candidate(t, study.constraints)
                  and improves(t.best_value, previous, study.mode))
        best.append(t.best_value if better else previous)
    return ProgressPlot(study.metric, tuple(range(1, len(done) + 1)),
                        tuple(float(t.best_value) for t in done),  # type: ignore[arg-type]
                        tuple(f"trial {t.number} ({t.state})" for t in done), tuple(best))
