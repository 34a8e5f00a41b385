"""report.md: the findings and tables as Markdown, with the static axis plots (PNG)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.html import fmt
from searchsvc.spec import StudySpec


def render_markdown(study: StudyRecord, spec: StudySpec, trials: Sequence[TrialRecord],
                    analysis: StudyAnalysis, plots: Sequence[Path], folder: Path) -> str:
    """report.md: the study's head and findings, then one section per analysis."""
    lines = [*_head(study, spec, analysis), *_best_trials(study, spec, analysis),
             *_space(study, analysis), *_training(analysis)]
    lines += ["", "## Metric against each searched parameter", ""]
    lines += [f"![{p.stem}]({p.relative_to(folder)})" for p in plots]
    lines += _errors(trials)
    lines += ["", "## Suggested next study", "", "Saved as `next_study.yaml`:", "", "```yaml",
              analysis.next_study.text.rstrip(), "```", "",
              "All trials: [trials.csv](trials.csv)", ""]
    return "\n".join(lines)


def _head(study: StudyRecord, spec: StudySpec, analysis: StudyAnalysis) -> list[str]:
    summary = analysis.summary
    counts = ", ".join(f"{n} {s}" for s, n in summary.counts.items() if n) or "none yet"
    repeats = sum(summary.repeat_counts.values())
    if repeats:
        counts += f"; {repeats} seed repeats"
    lines = [f"# Study `{study.name}`", ""]
    if spec.description:
        lines += [spec.description, ""]
    return [*lines,
            f"- metric: `{study.metric}` ({study.mode}) · searcher: `{study.searcher}` · "
            f"state: **{study.state}**",
            f"- trials: {sum(summary.counts.values()) + repeats} of {study.total_trials} "
            f"({counts})",
            "", "## Findings", "", *(f"- {f}" for f in analysis.findings), ""]


def _best_trials(study: StudyRecord, spec: StudySpec, analysis: StudyAnalysis) -> list[str]:
    lines = ["## Best trials", "",
             "Best value over each trial's training (retrospective: the best step, not the "
             "last).", ""]
    best = analysis.summary.best_trials
    params = [p for p in spec.parameter_order if any(p in t.config for t in best)]
    lines.append(f"| trial | {study.metric} | best step | " + " | ".join(params) + " |")
    lines.append("|---" * (3 + len(params)) + "|")
    for t in best:
        cells = [str(t.number), f"{t.value:.6g}", f"{t.best_step}/{t.last_step}",
                 *(fmt(t.config.get(p, "")) for p in params)]
        lines.append("| " + " | ".join(cells) + " |")
    if not best:
        lines.append("| (no trial produced a finite value yet) |")
    return lines


def _space(study: StudyRecord, analysis: StudyAnalysis) -> list[str]:
    """Boundary checks and isolation: what the results say about the search space."""
    lines: list[str] = []
    if analysis.boundaries:
        lines += ["", "## Boundary checks", "", "| parameter | range | status | suggested |",
                  "|---|---|---|---|"]
        lines += [f"| {c.parameter} | [{fmt(c.low)}, {fmt(c.high)}] {c.scale} | **{c.status}** "
                  f"| [{fmt(c.suggested_low)}, {fmt(c.suggested_high)}] |"
                  for c in analysis.boundaries]
    if analysis.isolation:
        lines += ["", "## Isolation", ""]
        for iso in analysis.isolation:
            lines += [f"**{iso.parameter}** — {iso.verdict}: {iso.detail}", "",
                      f"| {iso.parameter} | best {study.metric} | trial | trials |",
                      "|---|---|---|---|"]
            lines += [f"| {p.value} | {p.best:.5g} | {p.number} | {p.trials} |"
                      for p in iso.points]
            lines.append("")
    return lines


def _training(analysis: StudyAnalysis) -> list[str]:
    """Curves, importance, early stopping and PBT lineage: how the trials trained."""
    lines: list[str] = []
    if analysis.curves:
        lines += ["", "## Training curves of the best trials", "",
                  "| trial | arm | best step | issues |", "|---|---|---|---|"]
        lines += [f"| {c.number} | {c.arm} | {c.best_step}/{c.last_step} "
                  f"({c.best_step_position}) | {', '.join(c.issues) or 'none'} |"
                  for c in analysis.curves]
    if analysis.importance:
        lines += ["", "## Parameter importance (fANOVA)", ""]
        lines += [f"- {k}: {v:.0%}" for k, v in
                  sorted(analysis.importance.items(), key=lambda kv: -kv[1])]
    if analysis.rungs:
        lines += ["", "## Early stopping", "", "| rung (step) | reached | stopped |",
                  "|---|---|---|"]
        lines += [f"| {r.step} | {r.reached} | {len(r.stopped)} |" for r in analysis.rungs]
    if analysis.lineage:
        lines += ["", "## PBT lineage", ""]
        lines += [f"- step {e.step}: trial {e.number} copied trial {e.parent} ("
                  + ", ".join(f"{k} {fmt(a)} → {fmt(b)}" for k, (a, b) in e.changes.items())
                  + ")" for e in analysis.lineage]
    return lines


def _errors(trials: Sequence[TrialRecord]) -> list[str]:
    failed = [t for t in trials if t.error]
    if not failed:
        return []
    lines = ["", "## Trials with errors", ""]
    for trial in failed[:20]:
        last = (trial.error or "").strip().splitlines()[-1:]
        lines.append(f"- trial {trial.number} ({trial.state}): {last[0] if last else ''}")
    return lines
