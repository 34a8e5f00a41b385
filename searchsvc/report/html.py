"""report.html: one self-contained page (Plotly's JavaScript inlined once; opens offline)."""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Sequence
from typing import Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.report import figures
from searchsvc.spec import StudySpec
from searchsvc.store import StudyRecord, TrialRecord

CSS = """
body{font-family:system-ui,-apple-system,sans-serif;margin:0;color:#222;background:#fafafa}
main{max-width:1200px;margin:0 auto;padding:1.5em 2em}
h1{margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
.meta{color:#555}.badge{display:inline-block;padding:2px 8px;border-radius:10px;
background:#eee;margin-right:4px;font-size:.9em}
.completed{background:#d6f5e0}.pruned{background:#e6ecff}.failed,.infeasible{background:#fde0e0}
table{border-collapse:collapse;margin:.5em 0;background:#fff}
td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;font-size:.92em;vertical-align:top}
th{background:#f0f0f0}.ok{color:#1a7f46}.near_low,.near_high{color:#b86e00;font-weight:bold}
.divergence_edge{color:#c0302b;font-weight:bold}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:12px}
.fig{background:#fff;border:1px solid #e4e4e4;border-radius:6px}
.findings li{margin:.3em 0}pre{background:#fff;border:1px solid #ddd;padding:1em;overflow:auto}
"""


def render_html(study: StudyRecord, spec: StudySpec, trials: Sequence[TrialRecord],
                analysis: StudyAnalysis) -> str:
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    def fig_html(item: tuple[str, Any] | None) -> str:
        if item is None:
            return ""
        key, fig = item
        return '<div class="fig">' + pio.to_html(
            fig, full_html=False, include_plotlyjs=False, div_id=f"fig-{key}",
            config={"displaylogo": False, "responsive": True}) + "</div>"

    esc = html.escape
    summary = analysis.summary
    badges = "".join(f'<span class="badge {esc(s)}">{n} {esc(s)}</span>'
                     for s, n in summary.counts.items() if n)
    sections = [
        _section("findings", "Findings", "<ul class='findings'>" + "".join(
            f"<li>{esc(f)}</li>" for f in analysis.findings) + "</ul>"),
        _section("best", "Best trials", _best_table(spec, analysis)
                 + "<p class='meta'>Value = the best over each trial's training (the "
                 "retrospectively chosen step, not the last).</p>"),
        _section("boundaries", "Boundary checks", _boundary_table(analysis)),
    ]
    isolation = [fig_html(f) for f in figures.isolation_figures(spec, analysis)]
    if isolation:
        verdicts = "".join(f"<li>{esc(i.detail)}</li>" for i in analysis.isolation)
        sections.append(_section("isolation", "Isolation: scientific parameters",
                                 f"<ul>{verdicts}</ul><div class='grid'>{''.join(isolation)}"
                                 "</div>"))
    axes = "".join(fig_html(f) for f in figures.axis_figures(spec, trials, analysis))
    sections.append(_section("axes", "Metric against each searched parameter",
                             f"<div class='grid'>{axes}</div>"))
    curve = fig_html(figures.curve_figure(spec, trials, analysis))
    sections.append(_section("curves", "Training curves of the best trials",
                             curve + _curve_table(analysis)))
    importance = fig_html(figures.importance_figure(analysis))
    parallel = fig_html(figures.parallel_figure(spec, trials))
    if importance or parallel:
        sections.append(_section("importance", "Parameter importance",
                                 importance + parallel))
    scheduler = (fig_html(figures.rung_figure(analysis))
                 + fig_html(figures.lineage_figure(trials, analysis)))
    if scheduler:
        sections.append(_section("scheduler", "What the scheduler did", scheduler))
    text = analysis.next_study.text
    link = "data:text/yaml;base64," + base64.b64encode(text.encode()).decode()
    sections.append(_section("next", "Suggested next study", (
        f"<p><a download='next_study.yaml' href='{link}'>Download next_study.yaml</a> "
        "(also written next to this report); run it with "
        "<code>searchsvc run next_study.yaml</code>.</p>" f"<pre>{esc(text)}</pre>")))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>searchsvc · {esc(study.name)}</title><style>{CSS}</style>
<script>{get_plotlyjs()}</script></head><body><main>
<h1>Study <code>{esc(study.name)}</code></h1>
<p>{esc(spec.description)}</p>
<p class="meta">metric <b>{esc(study.metric)}</b> ({esc(study.mode)}) · searcher
<b>{esc(study.searcher)}</b> · state <b>{esc(study.state)}</b> ·
{sum(summary.counts.values())} of {study.total_trials or '?'} trials {badges}</p>
{''.join(sections)}
<p class="meta"><a href="trials.csv">All trials (CSV)</a> · report.json · report.md</p>
</main></body></html>
"""


def _section(key: str, title: str, body: str) -> str:
    return f'<section id="{key}"><h2>{html.escape(title)}</h2>{body}</section>'


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table of escaped ``headers`` and cells given as HTML (escape text before)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _best_table(spec: StudySpec, analysis: StudyAnalysis) -> str:
    best = analysis.summary.best_trials
    if not best:
        return "<p>No trial produced a finite result yet.</p>"
    params = [p for p in spec.parameter_order
              if spec.parameters[p].searched and any(p in t.config for t in best)]
    return _table(["trial", spec.metric, "best step", *params, "checkpoints"], (
        [html.escape(c) for c in [
            str(t.number), f"{t.value:.5g}", f"{t.best_step} of {t.last_step}",
            *(fmt(t.config.get(p, "")) for p in params), str(len(t.checkpoints))]]
        for t in best))


def _boundary_table(analysis: StudyAnalysis) -> str:
    if not analysis.boundaries:
        return "<p>No searched numeric range.</p>"
    esc = html.escape
    return _table(["parameter", "range", "status", "suggested", "why"], (
        [esc(c.parameter), f"[{fmt(c.low)}, {fmt(c.high)}] {esc(c.scale)}",
         f"<span class='{c.status}'>{c.status}</span>",
         f"[{fmt(c.suggested_low)}, {fmt(c.suggested_high)}]", esc(c.detail)]
        for c in analysis.boundaries))


def _curve_table(analysis: StudyAnalysis) -> str:
    if not analysis.curves:
        return ""
    esc = html.escape
    return _table(["trial", "arm", "best step", "issues", "what it means"], (
        [str(c.trial_id), esc(c.arm),
         f"{c.best_step} of {c.last_step} ({c.best_step_position})",
         esc(", ".join(c.issues) or "none"), "<br>".join(esc(d) for d in c.details)]
        for c in analysis.curves))


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
