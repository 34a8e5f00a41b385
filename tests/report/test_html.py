"""report.html from its Jinja2 template: whatever a study's names, description or parameter
values contain, the page escapes it, and no value can close the <script> of a figure."""

from __future__ import annotations

import re

from searchsvc.analysis import analyze
from searchsvc.report.html import render_html
from searchsvc.report.sections import report_plots
from tests.report.studies import make_trials, study

HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>&'\""


def test_study_strings_are_escaped_in_the_text_and_inside_the_figures():
    widths = (HOSTILE, "relu")  # a scientific value: an arm's name in the figures' legends
    record, spec = study("max", name=f"x{HOSTILE}", description=HOSTILE, widths=widths)
    trials = make_trials(40, infeasible={5}, widths=widths)
    analysis = analyze(record, spec, trials)
    page = render_html(record, spec, analysis, report_plots(spec, trials, analysis))

    figures = re.findall(r'<div id="(fig-[^"]+)" class="plotly-graph-div"', page)
    assert {"fig-axis-learning_rate", "fig-axis-dropout", "fig-parallel"} <= set(figures)
    # Only the page's own scripts: Plotly's bundle and one per figure.
    assert page.count("<script>") == page.count("</script>") == 1 + len(figures)
    assert "<img" not in page and "alert(1)" in page
    text = ("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
            "&lt;img src=x onerror=alert(2)&gt;&amp;&#39;&#34;")
    assert f"<h1>Study <code>x{text}</code></h1>" in page
    assert f"<p>{text}</p>" in page  # the description
    # In a figure's JSON (the legend "width=</script>..."): escaped for <script>, by tojson.
    assert "width=\\u003c/script\\u003e\\u003cscript\\u003ealert(1)" in page


def test_every_section_is_rendered_from_the_template():
    record, spec = study("min")
    trials = make_trials(40, infeasible={1, 2})
    analysis = analyze(record, spec, trials)
    page = render_html(record, spec, analysis, report_plots(spec, trials, analysis))
    sections = re.findall(r'<section id="([a-z]+)">', page)
    # No scheduler events: no "scheduler" section; full curves: the early-stopping replay.
    assert sections == ["findings", "best", "boundaries", "isolation", "axes", "curves",
                        "importance", "replay", "next"]
    assert page.startswith("<!doctype html>")
    assert '<span class="badge infeasible">2 infeasible</span>' in page
    assert 'href="data:text/yaml;base64,' in page
    assert not re.search(r"<(script|link)[^>]*(src|href)=", page)  # self-contained


def test_a_study_started_without_preflight_says_so_in_its_preflight_section():
    from dataclasses import replace

    from searchsvc.usecases import PREFLIGHT_SKIPPED

    record, spec = study("min")
    record = replace(record, provenance={**record.provenance, "preflight": PREFLIGHT_SKIPPED})
    trials = make_trials(10)
    analysis = analyze(record, spec, trials)
    page = render_html(record, spec, analysis, report_plots(spec, trials, analysis))
    section = page.split('<section id="preflight">', 1)[1].split("</section>", 1)[0]
    assert "Not run: started without preflight (--no-preflight)." in section
    assert "FAILED" not in section and "estimated wall time" not in section


def test_the_dimensionality_section_draws_each_layer_and_tabulates_the_best_and_collapsed():
    from dataclasses import replace

    from searchsvc.core import Measurement

    record, spec = study("min")
    trials = make_trials(12)

    def watched(t, width: float):
        dims = [Measurement(m.step, m.value, m.metrics, m.attempt, dimensionality={
            "source": "probe", "layers": {"enc": {"participation_ratio": width,
                                                  "stable_rank": 1.0}}})
                for m in t.measurements]
        return replace(t, measurements=tuple(dims))

    trials = [watched(t, 1.0 if t.number == 3 else 5.0 + t.number) for t in trials]
    analysis = analyze(record, spec, trials)
    assert analysis.dimensionality is not None
    page = render_html(record, spec, analysis, report_plots(spec, trials, analysis))
    assert re.findall(r'<section id="([a-z]+)">', page)[-2] == "dimensionality"
    assert 'id="fig-dimensionality-0"' in page and "Layer \\u0027enc\\u0027" in page
    assert '"name": "trial 3 (collapsed)"' in page  # drawn beside the best trials
    assert "<td>3</td><td>enc</td><td>low</td>" in page  # the collapsed trial's row
    best = analysis.summary.best_trials[0].number
    assert f"<tr><td>{best}</td>" in page and f"{5.0 + best:g} → {5.0 + best:g}" in page
