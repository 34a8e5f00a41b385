"""Interactive Plotly figures for the HTML report. Only draws: what each plot shows (trials,
downsampling, infeasible placement, scales, labels) comes from ``plotdata``, shared with the
PNGs; styling (sizes, colours, heights, WebGL) is decided here."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from searchsvc.report.plotdata import (
    AxisPlot,
    BarPlot,
    CurvePlot,
    HypervolumePlot,
    IsolationPlot,
    LineagePlot,
    ParallelPlot,
    ParetoPlot,
    ProgressPlot,
    ReplayPlot,
    RungPlot,
    TelemetryPlot,
)

WEBGL_FROM = 3000  # trials per scatter plot above which WebGL draws them
STATUS_COLOURS = {"ok": "#2a7", "near_low": "#d80", "near_high": "#d80",
                  "divergence_edge": "#c33"}
LAYOUT = dict(template="plotly_white", margin=dict(l=60, r=20, t=50, b=50), height=360,
              font=dict(size=12))


def axis_figure(plot: AxisPlot) -> go.Figure:
    """One point per trial and one colour per arm; infeasible trials as red crosses; the
    declared range's edges as dotted lines; the boundary verdict, coloured, in the title."""
    fig = go.Figure()
    scatter = go.Scattergl if plot.shown > WEBGL_FROM else go.Scatter
    for arm in plot.arms:
        fig.add_trace(scatter(x=arm.x, y=arm.y, text=arm.text, mode="markers", name=arm.name,
                              marker=dict(size=6, opacity=0.75)))
    if plot.infeasible is not None:
        bad = plot.infeasible
        fig.add_trace(scatter(x=bad.x, y=bad.y, text=bad.text, mode="markers", name=bad.name,
                              marker=dict(symbol="x", color="red", size=8)))
    title = plot.title
    if plot.edges is not None:
        for edge in plot.edges:
            fig.add_vline(x=edge, line_dash="dot", line_color="grey")
    if plot.x_log:
        fig.update_xaxes(type="log")
    if plot.status is not None:
        colour = STATUS_COLOURS.get(plot.status, "#333")
        title += f" — <span style='color:{colour}'>{plot.status}</span>"
    fig.update_layout(title=title, xaxis_title=plot.x_label, yaxis_title=plot.y_label,
                      **LAYOUT)
    return fig


def isolation_figure(plot: IsolationPlot) -> go.Figure:
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=plot.best.x, y=plot.best.y, mode="markers+lines",
                             name=plot.best.name, marker=dict(size=11), text=plot.best.text))
    fig.add_trace(go.Scatter(x=plot.spread.x, y=plot.spread.y, mode="markers",
                             name=plot.spread.name,
                             marker=dict(size=6, color="grey", opacity=0.6)))
    if plot.means is not None:
        fig.add_trace(go.Scatter(
            x=plot.means.x, y=plot.means.y, mode="markers", name=plot.means.name,
            text=plot.means.text, marker=dict(size=10, symbol="diamond", color="#c0302b"),
            error_y=dict(type="data", symmetric=False,
                         array=[h - m for h, m in zip(plot.ci_high, plot.means.y, strict=True)],
                         arrayminus=[m - lo for lo, m in zip(plot.ci_low, plot.means.y,
                                                              strict=True)])))
    fig.update_layout(title=plot.title, xaxis_title=plot.x_label, xaxis_type="category",
                      yaxis_title=plot.y_label, **LAYOUT)
    return fig


def curve_figure(plot: CurvePlot) -> go.Figure:
    """Each curve as a line, its best step as a star."""
    fig = go.Figure()
    for line in plot.lines:
        if line.band is not None:  # the seed repeats' spread around their mean
            steps, lows, highs = line.band
            fig.add_trace(go.Scatter(x=[*steps, *reversed(steps)], y=[*highs, *reversed(lows)],
                                     fill="toself", mode="lines", line=dict(width=0),
                                     opacity=0.25, hoverinfo="skip",
                                     name=f"{line.name.split(':')[0]}: seed repeats, mean ± sd"))
        fig.add_trace(go.Scatter(x=line.steps, y=line.values, mode="lines", name=line.name))
        if line.best is not None:
            fig.add_trace(go.Scatter(x=[line.best[0]], y=[line.best[1]], mode="markers",
                                     showlegend=False, marker=dict(symbol="star", size=11),
                                     hovertext=line.best_text))
    fig.update_layout(title=plot.title, xaxis_title=plot.x_label, yaxis_title=plot.y_label,
                      **{**LAYOUT, "height": 420})
    return fig


def pareto_figure(plot: ParetoPlot) -> go.Figure:
    """Each arm's trials as points, its front as a step line; infeasible trials as crosses."""
    fig = go.Figure()
    for arm in plot.arms:
        fig.add_trace(go.Scatter(x=arm.x, y=arm.y, text=arm.text, mode="markers",
                                 name=arm.name, marker=dict(size=7, opacity=0.7)))
    for front in plot.fronts:
        fig.add_trace(go.Scatter(x=front.x, y=front.y, text=front.text, mode="lines+markers",
                                 name=front.name, line=dict(shape="hv", width=2),
                                 marker=dict(size=10, symbol="diamond-open")))
    if plot.infeasible is not None:
        bad = plot.infeasible
        fig.add_trace(go.Scatter(x=bad.x, y=bad.y, text=bad.text, mode="markers",
                                 name=bad.name, marker=dict(symbol="x", color="red", size=8)))
    fig.update_layout(title=plot.title, xaxis_title=plot.x_label, yaxis_title=plot.y_label,
                      **{**LAYOUT, "height": 450})
    return fig


def hypervolume_figure(plot: HypervolumePlot) -> go.Figure:
    fig = go.Figure(go.Scatter(x=plot.trials, y=plot.values, mode="lines+markers",
                               line=dict(shape="hv"), name="hypervolume"))
    fig.update_layout(title=plot.title, xaxis_title="trials finished",
                      yaxis_title="hypervolume", **LAYOUT)
    return fig


def importance_figure(plot: BarPlot) -> go.Figure:
    fig = go.Figure(go.Bar(x=plot.values, y=plot.labels, orientation="h", text=plot.text,
                           textposition="auto"))
    fig.update_layout(title=plot.title, xaxis_tickformat=".0%",
                      **{**LAYOUT, "height": 120 + 40 * len(plot.labels)})
    return fig


def parallel_figure(plot: ParallelPlot) -> go.Figure:
    dims = []
    for d in plot.dimensions:
        dim: dict[str, Any] = dict(label=d.label, values=d.values)
        if d.tick_values is not None:
            dim.update(tickvals=d.tick_values, ticktext=d.tick_text)
        dims.append(dim)
    fig = go.Figure(go.Parcoords(
        line=dict(color=plot.colour, colorscale="Viridis", showscale=True,
                  reversescale=plot.lower_is_better), dimensions=dims))
    fig.update_layout(title=plot.title,
                      **{**LAYOUT, "height": 420, "margin": dict(l=80, r=40, t=80, b=40)})
    return fig


def rung_figure(plot: RungPlot) -> go.Figure:
    fig = go.Figure([
        go.Bar(x=plot.steps, y=plot.reached, name="reached this step"),
        go.Bar(x=plot.steps, y=plot.stopped, name="stopped here", text=plot.stopped_text,
               hovertemplate="stopped: %{text}<extra></extra>"),
    ])
    fig.update_layout(title=plot.title, barmode="group", xaxis_title=plot.x_label,
                      yaxis_title=plot.y_label, **LAYOUT)
    return fig


def replay_figure(plot: ReplayPlot) -> go.Figure:
    """Each replayed setting: green where it keeps the top trials, red where it loses one; the
    study's own best as a dotted line."""
    fig = go.Figure()
    for series, colour in ((plot.kept, "#2a7"), (plot.lost, "#c33")):
        fig.add_trace(go.Scatter(x=list(series.x), y=list(series.y), text=list(series.text),
                                 mode="markers", name=series.name,
                                 marker=dict(color=colour, size=9)))
    if plot.full_best is not None:
        fig.add_hline(y=plot.full_best, line_dash="dot", line_color="grey",
                      annotation_text="every trial to its end")
    fig.update_layout(title=plot.title, xaxis_title=plot.x_label, yaxis_title=plot.y_label,
                      **LAYOUT)
    return fig


def lineage_figure(plot: LineagePlot) -> go.Figure:
    """Lifetimes as grey lines; all exploits as one trace of arrows (segments split by None)."""
    fig = go.Figure()
    for number, last_step in plot.lifetimes:
        fig.add_trace(go.Scatter(x=[0, last_step], y=[number, number], mode="lines",
                                 line=dict(color="#bbb"), showlegend=False,
                                 hovertext=f"trial {number}"))
    xs: list[Any] = []
    ys: list[Any] = []
    text: list[str] = []
    for a in plot.arrows:
        xs += [a.parent_step, a.step, None]
        ys += [a.parent, a.child, None]
        text += ["", a.text, ""]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name="exploit (parent → child)",
                             hovertext=text, marker=dict(symbol="arrow", angleref="previous",
                                                         size=10)))
    fig.update_layout(title=plot.title, xaxis_title=plot.x_label, yaxis_title=plot.y_label,
                      **{**LAYOUT, "height": 160 + 22 * len(plot.lifetimes)})
    return fig


def telemetry_figure(plot: TelemetryPlot) -> go.Figure:
    """Per trial (with telemetry): mean step time (bars, left axis) and the fraction of it
    spent waiting for data (markers, right axis; the input-bound threshold dotted)."""
    fig = go.Figure()
    fig.add_trace(go.Bar(x=[b.trial for b in plot.bars], y=[b.step_time_s for b in plot.bars],
                         name="mean step time (s)"))
    waits = [b for b in plot.bars if b.data_wait is not None]
    if waits:
        fig.add_trace(go.Scatter(x=[b.trial for b in waits], y=[b.data_wait for b in waits],
                                 mode="markers", name="data-wait fraction", yaxis="y2",
                                 marker=dict(size=10, symbol="diamond")))
        fig.add_hline(y=plot.threshold, line_dash="dot", yref="y2",
                      annotation_text="input-bound above this")
    fig.update_layout(
        title=plot.title, height=380, xaxis_title="trial",
        xaxis_type="category", yaxis_title="mean step time (s)",
        yaxis2=dict(title="waiting for data", overlaying="y", side="right", range=[0, 1],
                    tickformat=".0%"),
        legend=dict(orientation="h", y=-0.25))
    return fig


def progress_figure(plot: ProgressPlot) -> go.Figure:
    """The web UI's progress plot: each finished trial's best metric in the order trials
    finished (markers), and the study's best so far (a step line)."""
    fig = go.Figure()
    fig.add_scatter(x=plot.order, y=plot.values, mode="markers", name="trial", text=plot.labels,
                    marker=dict(size=6, color="#8aa4c8"))
    fig.add_scatter(x=plot.order, y=plot.best_so_far, mode="lines", name="best so far",
                    line=dict(color="#1f5fa8", width=2, shape="hv"))
    fig.update_layout(template="plotly_white", height=300, margin=dict(l=60, r=20, t=30, b=40),
                      xaxis_title="trials finished", yaxis_title=plot.metric,
                      legend=dict(orientation="h", y=1.12))
    return fig
