"""report.md: the study's head, then each section's text (with the PNGs drawn from the same
plot data as report.html's figures), in the order of the sections' ``md_rank``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.sections import SECTIONS, ReportContext
from searchsvc.spec import StudySpec


def render_markdown(study: StudyRecord, spec: StudySpec, trials: Sequence[TrialRecord],
                    analysis: StudyAnalysis, images: Mapping[str, Sequence[Path]],
                    folder: Path) -> str:
    """report.md: the study's head, then every section's parts (``images``: each section's
    PNGs, by its key, all in ``folder``)."""
    context = ReportContext(study, spec, trials, analysis)
    parts: list[tuple[int, list[str]]] = []
    for section in SECTIONS:
        relative = [p.relative_to(folder) for p in images.get(section.key, ())]
        parts += section.markdown_parts(context, relative)
    lines = _head(study, spec, analysis)
    for _, part in sorted(parts, key=lambda p: p[0]):  # stable: SECTIONS order within a rank
        lines += part
    lines += ["All trials: [trials.csv](trials.csv)", ""]
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
            f"({counts})", ""]
