"""A campaign's best value per round, with the seed noise as an error bar and each round's
decisions as its label: a Plotly figure for the web UI's campaign page, and a matplotlib one
for the campaigns documentation page (``benchmarks/campaign_figure.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from searchsvc.analysis.campaign import Campaign, Round
from searchsvc.report.figures import PAGE_LAYOUT
from searchsvc.report.plots import new_figure

if TYPE_CHECKING:
    import plotly.graph_objects as go
    from matplotlib.figure import Figure


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


def campaign_figure(plot: CampaignPlot) -> go.Figure:
    """The web UI's campaign plot: the best per round as a line, each round labelled, its
    seed noise as an error bar."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_scatter(x=plot.rounds, y=plot.best, mode="lines+markers+text", text=plot.labels,
                    textposition="top right", error_y=dict(type="data", array=plot.noise),
                    name=plot.y_label, line=dict(color="#1f5fa8", width=2))
    fig.update_layout(**PAGE_LAYOUT, xaxis=dict(title=plot.x_label, dtick=1),
                      yaxis_title=plot.y_label)
    return fig


def draw_campaign_plot(plot: CampaignPlot) -> Figure:
    """``plot`` as a matplotlib figure, not yet saved: the best per round with its seed noise
    as an error bar, each round labelled with its study and the kinds of its decisions."""
    fig, ax = new_figure(6, 3.4)
    ax.errorbar(plot.rounds, plot.best, yerr=plot.noise, marker="o", capsize=4)
    for x, y, label in zip(plot.rounds, plot.best, plot.labels, strict=True):
        ax.annotate(label, (x, y), fontsize=7, xytext=(4, 8), textcoords="offset points")
    ax.set_xticks(list(plot.rounds))
    ax.set_xlim(min(plot.rounds) - 0.3, max(plot.rounds) + 1.2)
    ax.set_xlabel(plot.x_label)
    ax.set_ylabel(plot.y_label)
    ax.set_title(plot.title, fontsize=9)
    fig.tight_layout()
    return fig
