"""Writes a study's report files: trials.csv, report.json, report.md, report.html, plots/."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchsvc.analysis import StudySummary, summarize
from searchsvc.errors import SearchsvcError
from searchsvc.report.plots import axis_plots
from searchsvc.report.tables import write_trials_csv
from searchsvc.spec import StudySpec, parse_spec
from searchsvc.store import Store, StudyRecord, TrialRecord, searchsvc_home

FORMATS = ("html", "md", "json")


@dataclass(frozen=True)
class ReportFiles:
    folder: Path
    files: dict[str, Path]

    @property
    def main(self) -> Path:
        for fmt in FORMATS:
            if fmt in self.files:
                return self.files[fmt]
        return self.files["csv"]


def write_report(store: Store, study_name: str, out_dir: str | Path | None = None,
                 formats: Iterable[str] = FORMATS) -> ReportFiles:
    """Write the report of ``study_name`` into ``out_dir`` (default: the study's results
    folder). trials.csv is always written."""
    formats = list(formats)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise SearchsvcError(f"unknown report format {unknown[0]!r} (valid: {', '.join(FORMATS)})")
    study = store.get_study(study_name)
    trials = store.get_trials(study_name, measurements=False)
    spec = parse_spec(study.spec_text, file=study.spec_file)
    folder = Path(out_dir or study.results_dir or searchsvc_home() / "results" / study.name)
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {"csv": folder / "trials.csv"}
    write_trials_csv(trials, files["csv"])
    summary = summarize(study, trials)
    plots = axis_plots(spec, trials, folder / "plots")
    if "json" in formats:
        files["json"] = folder / "report.json"
        files["json"].write_text(json.dumps(report_data(study, summary), indent=2, default=str))
    if "md" in formats:
        files["md"] = folder / "report.md"
        files["md"].write_text(render_markdown(study, spec, summary, trials, plots, folder))
    if "html" in formats:
        files["html"] = folder / "report.html"
        files["html"].write_text(render_html(study, spec, summary, plots))
    return ReportFiles(folder, files)


def report_data(study: StudyRecord, summary: StudySummary) -> dict[str, Any]:
    return {
        "study": study.name,
        "metric": study.metric,
        "mode": study.mode,
        "state": study.state,
        "total_trials": study.total_trials,
        "counts": dict(summary.counts),
        "best_trials": [
            {"trial_id": t.number, "value": t.value, "best_step": t.best_step,
             "last_step": t.last_step, "config": dict(t.config), "checkpoints": list(t.checkpoints)}
            for t in summary.best_trials
        ],
        "provenance": dict(study.provenance),
    }


def _counts_line(summary: StudySummary) -> str:
    return ", ".join(f"{n} {state}" for state, n in summary.counts.items() if n)


def render_markdown(study: StudyRecord, spec: StudySpec, summary: StudySummary,
                    trials: Sequence[TrialRecord], plots: Sequence[Path], folder: Path) -> str:
    lines = [f"# Study `{study.name}`", ""]
    if spec.description:
        lines += [spec.description, ""]
    lines += [
        f"- metric: `{study.metric}` ({study.mode}) · searcher: `{study.searcher}` · "
        f"state: **{study.state}**",
        f"- trials: {sum(summary.counts.values())} of {study.total_trials} "
        f"({_counts_line(summary) or 'none yet'})", "",
        "## Best trials", "",
        "Best value over each trial's training (retrospective: the best step, not the last).", "",
    ]
    params = [p for p in spec.parameters if any(p in t.config for t in summary.best_trials)]
    lines.append("| trial | " + f"{study.metric} | best step | " + " | ".join(params) + " |")
    lines.append("|---" * (3 + len(params)) + "|")
    for t in summary.best_trials:
        cells = [str(t.number), f"{t.value:.6g}", f"{t.best_step}/{t.last_step}"]
        cells += [_fmt(t.config.get(p, "")) for p in params]
        lines.append("| " + " | ".join(cells) + " |")
    if not summary.best_trials:
        lines.append("| (no trial produced a finite value yet) |")
    lines += ["", "## Metric against each searched parameter", ""]
    lines += [f"![{p.stem}]({p.relative_to(folder)})" for p in plots]
    failed = [t for t in trials if t.error]
    if failed:
        lines += ["", "## Trials with errors", ""]
        for t in failed[:20]:
            last = (t.error or "").strip().splitlines()[-1:]
            lines.append(f"- trial {t.number} ({t.state}): {last[0] if last else ''}")
    lines += ["", "All trials: [trials.csv](trials.csv)", ""]
    return "\n".join(lines)


def render_html(study: StudyRecord, spec: StudySpec, summary: StudySummary,
                plots: Sequence[Path]) -> str:
    esc = html.escape
    params = [p for p in spec.parameters if any(p in t.config for t in summary.best_trials)]
    rows = "".join(
        "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in
                         [str(t.number), f"{t.value:.6g}", f"{t.best_step}/{t.last_step}",
                          *(_fmt(t.config.get(p, "")) for p in params)]) + "</tr>"
        for t in summary.best_trials)
    images = "".join(
        f'<figure><img alt="{esc(p.stem)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.read_bytes()).decode()}"></figure>' for p in plots)
    head = "".join(f"<th>{esc(h)}</th>" for h in ["trial", study.metric, "best step", *params])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>searchsvc · {esc(study.name)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}
figure{{display:inline-block;margin:0.5em}}</style></head><body>
<h1>Study <code>{esc(study.name)}</code></h1><p>{esc(spec.description)}</p>
<p>metric <b>{esc(study.metric)}</b> ({esc(study.mode)}) · searcher {esc(study.searcher)} ·
state <b>{esc(study.state)}</b> · {esc(_counts_line(summary))}</p>
<h2>Best trials</h2><table><tr>{head}</tr>{rows}</table>
<h2>Metric against each searched parameter</h2>{images}
<p><a href="trials.csv">All trials (CSV)</a></p></body></html>
"""


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
