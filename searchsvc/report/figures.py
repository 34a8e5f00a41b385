"""What the report's and the web UI's Plotly figures share: the layouts and the figure more
than one section draws (``curve_figure``). Each section's and chart's own figures live in its
own module (``searchsvc/report/sections/<name>.py``, ``searchsvc/report/charts/<name>.py``),
next to the plot data they draw; styling (sizes, colours, heights) is decided there, from
these layouts.

Plotly is imported only inside the functions that draw, so importing a section does not
import it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from searchsvc.report.plotdata import CurvePlot

if TYPE_CHECKING:
    import plotly.graph_objects as go

# report.html's figures
LAYOUT: dict[str, Any] = dict(template="plotly_white", margin=dict(l=60, r=20, t=50, b=50),
                              height=360, font=dict(size=12))
# the web UI's charts (a study's progress, a campaign's rounds): shorter, no title
PAGE_LAYOUT: dict[str, Any] = dict(template="plotly_white", height=300,
                                   margin=dict(l=60, r=20, t=30, b=40))


def curve_figure(plot: CurvePlot) -> go.Figure:
    """Each curve as a line, its best step as a star, its seed repeats' band around it."""
    import plotly.graph_objects as go

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
