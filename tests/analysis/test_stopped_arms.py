"""Arms compared only on trials that reached the full budget: early stopping stops a
slow-starting arm more often, and its truncated values must not decide the science
(searchsvc.core.judging.budget_split; isolation, importance and the report's per-value tables
use it). Records are built directly: pure, no Ray."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import pytest

from searchsvc.analysis import analyze
from searchsvc.analysis.importance import parameter_importance
from searchsvc.analysis.isolation import (
    METHOD_PROXY,
    STOPPED_EARLY_TEXT,
    VERDICT_DIFFERS,
    VERDICT_INSUFFICIENT,
    VERDICT_STOPPED_EARLY,
    VERDICT_WITHIN_NOISE,
    Isolation,
    isolate,
)
from searchsvc.analysis.noise import estimate_noise
from searchsvc.core import StudyRecord, StudyState, TrialRecord, TrialState
from searchsvc.core.judging import (
    best_trial,
    budget_split,
    full_budget_trials,
    reached_full_budget,
)
from searchsvc.report.sections import FigureView, ReportContext
from searchsvc.report.sections.isolation import IsolationSection, isolation_plots
from searchsvc.spec import StudySpec, parse_spec

MAX_STEPS = 9
# The section's fragment shows only with figures; what they hold does not matter here.
FIGURE = [FigureView(id="fig-isolation-depth", height=100, data=[], layout={})]
SPEC = """
study: stopped-arms
objective: objectives.synthetic:playbook
metric: val_loss
mode: min
searcher: random
seed: 3
budget: {{trials: 24{max_steps}}}
parameters:
  depth: {{role: scientific, values: [1, 2]}}
  learning_rate: {{role: nuisance, low: 1.0e-4, high: 1.0e-1, scale: log}}
"""


def spec(max_steps: int | None = MAX_STEPS) -> StudySpec:
    steps = "" if max_steps is None else f", max_steps: {max_steps}"
    return parse_spec(SPEC.format(max_steps=steps), file="stopped.yaml")


class Trials:
    """Builds trials numbered in order: each a depth, a learning rate and where it ended."""

    def __init__(self) -> None:
        self.trials: list[TrialRecord] = []

    def add(self, depth: int, value: float, *, step: int = MAX_STEPS, pruned: bool = False,
            lr: float = 1e-3, repeat_of: int | None = None) -> TrialRecord:
        number = len(self.trials)
        trial = TrialRecord(
            id=number + 1, study_id=1, number=number,
            state=TrialState.PRUNED if pruned else TrialState.COMPLETED,
            config={"depth": depth, "learning_rate": lr}, arm={"depth": depth}, seed=number,
            best_value=value, best_step=step, last_step=step, repeat_of=repeat_of,
            final_metrics={"val_loss": value})
        self.trials.append(trial)
        return trial

    def full(self, depth: int, values: Sequence[float]) -> None:
        for i, v in enumerate(values):
            self.add(depth, v, lr=10 ** (-4 + 3 * i / max(len(values) - 1, 1)))

    def stopped(self, depth: int, count: int, value: float = 1.4) -> None:
        """``count`` trials stopped at steps 1-3 with bad values (the arm learns slowly)."""
        for i in range(count):
            self.add(depth, value + 0.001 * i, step=1 + i % 3, pruned=True,
                     lr=10 ** (-4 + 3 * i / max(count - 1, 1)))


def one(found: list[Isolation]) -> Isolation:
    [iso] = found
    assert iso.parameter == "depth"
    return iso


def point(iso: Isolation, value: int):
    return next(p for p in iso.points if p.value == value)


# -- the one rule ------------------------------------------------------------------------------

def test_only_a_pruned_trial_short_of_max_steps_misses_the_full_budget() -> None:
    t = Trials()
    completed = t.add(1, 0.3)
    short_completed = t.add(1, 0.3, step=4)  # its own loop ended: not stopped by a rule
    pruned = t.add(1, 1.4, step=3, pruned=True)
    pruned_at_end = t.add(1, 0.5, step=MAX_STEPS, pruned=True)
    repeat = t.add(1, 0.3, step=3, pruned=True, repeat_of=0)
    assert reached_full_budget(completed, MAX_STEPS)
    assert reached_full_budget(short_completed, MAX_STEPS)
    assert not reached_full_budget(pruned, MAX_STEPS)
    assert reached_full_budget(pruned_at_end, MAX_STEPS)
    assert reached_full_budget(repeat, MAX_STEPS)  # seed repeats always run the budget
    assert reached_full_budget(pruned, None)  # no max_steps: every trial counts, as before
    split = budget_split(t.trials, MAX_STEPS)
    assert split.full == (completed, short_completed, pruned_at_end, repeat)
    assert split.stopped == (pruned,) and split.total == 5 and not split.mostly_stopped
    assert full_budget_trials(t.trials, MAX_STEPS) == list(split.full)
    assert budget_split(t.trials, None).stopped == ()


def test_the_split_counts_only_trials_with_a_result_and_says_when_most_were_stopped() -> None:
    t = Trials()
    t.stopped(2, 3)
    t.add(2, 0.3)
    failed = TrialRecord(id=99, study_id=1, number=99, state=TrialState.FAILED,
                         config={"depth": 2}, arm={"depth": 2}, seed=0)
    split = budget_split([*t.trials, failed], MAX_STEPS)
    assert (len(split.full), len(split.stopped), split.total) == (1, 3, 4)
    assert split.mostly_stopped and split.stopped_share == pytest.approx(0.75)


def test_the_studys_best_still_counts_pruned_trials() -> None:
    t = Trials()
    t.full(1, [0.5, 0.6])
    early = t.add(2, 0.1, step=2, pruned=True)  # best value, though stopped early
    assert best_trial(t.trials, "min") is early


# -- 1. a planted tie --------------------------------------------------------------------------

def planted_tie() -> Trials:
    """depth=1 and 2 tie at the full budget; depth=2 learns slowly, so early stopping stopped
    9 of its 12 trials at steps 1-3 with bad values."""
    t = Trials()
    t.full(1, [0.300 + 0.01 * i for i in range(12)])
    t.stopped(2, 9)
    t.full(2, [0.300, 0.310, 0.320])
    return t


def test_a_tie_hidden_by_early_stopping_is_within_noise_and_says_how_many_were_stopped(
) -> None:
    iso = one(isolate(spec(), planted_tie().trials))
    assert iso.verdict == VERDICT_WITHIN_NOISE
    assert iso.gap == pytest.approx(0.0)
    assert "early stopping stopped 9 of 12 trials of depth=2" in iso.detail
    assert "depth=1" not in iso.detail.split("within the trial-to-trial")[1]  # not stopped
    slow = point(iso, 2)
    assert (slow.trials, slow.stopped, slow.best) == (3, 9, pytest.approx(0.3))
    assert slow.top_values == pytest.approx((0.30, 0.31, 0.32))
    assert (point(iso, 1).trials, point(iso, 1).stopped) == (12, 0)


# -- 2. an arm with fewer than two full-budget trials -------------------------------------------

@pytest.mark.parametrize("full", [0, 1])
def test_an_arm_with_fewer_than_two_full_budget_trials_gets_no_verdict(full: int) -> None:
    t = Trials()
    t.full(1, [0.3378 + 0.01 * i for i in range(12)])
    t.stopped(2, 12 - full, value=1.401)
    t.full(2, [0.2] * full)  # even better than depth=1: still one trial is not a comparison
    iso = one(isolate(spec(), t.trials))
    assert iso.verdict == VERDICT_STOPPED_EARLY
    assert iso.best_value is None and iso.gap is None
    assert iso.detail.startswith(f"depth=2: {STOPPED_EARLY_TEXT} (")
    assert STOPPED_EARLY_TEXT == "cannot compare: its trials were stopped early"
    assert f"early stopping stopped {12 - full} of 12 trials of depth=2" in iso.detail
    assert f"{full or 'none'} reached the full 9 steps" in iso.detail
    assert "is best" not in iso.detail and "depth=1:" not in iso.detail
    slow = point(iso, 2)
    assert slow.trials == full and slow.stopped == 12 - full
    assert (slow.best is None) == (full == 0)


def test_without_max_steps_every_trial_counts_as_before() -> None:
    t = Trials()
    t.full(1, [0.3378 + 0.01 * i for i in range(12)])
    t.stopped(2, 12, value=1.401)
    iso = one(isolate(spec(max_steps=None), t.trials))
    # The old behaviour (and the confident wrong verdict the full-budget rule prevents).
    assert iso.verdict == VERDICT_DIFFERS and iso.best_value == 1
    assert point(iso, 2).stopped == 0 and point(iso, 2).trials == 12


def test_an_arm_with_too_few_trials_none_stopped_is_insufficient_not_stopped_early() -> None:
    t = Trials()
    t.full(1, [0.3, 0.31, 0.32])
    t.full(2, [0.3])
    assert one(isolate(spec(), t.trials)).verdict == VERDICT_INSUFFICIENT


def test_seed_repeats_count_as_full_budget_trials() -> None:
    t = Trials()
    t.full(1, [0.30, 0.31, 0.32])
    t.stopped(2, 5)
    t.add(2, 0.29)  # one search trial of depth=2 reached the budget...
    for n in range(3):  # ...and its config was rerun with three seeds (each the whole budget)
        t.add(1, 0.30 + 0.002 * n, repeat_of=0, lr=1e-4)
        t.add(2, 0.30 + 0.002 * n, repeat_of=8)
    search = [x for x in t.trials if x.repeat_of is None]
    iso = one(isolate(spec(), search, estimate_noise(t.trials)))
    assert iso.verdict in (VERDICT_DIFFERS, VERDICT_WITHIN_NOISE)
    assert iso.method != METHOD_PROXY
    assert "early stopping stopped 5 of 6 trials of depth=2" in iso.detail


def learning_rate_study() -> Trials:
    """At the full budget only the learning rate matters; depth=2's stopped trials (bad,
    truncated values) would make depth look decisive."""
    t = Trials()
    for depth in (1, 2):
        for i in range(6):
            lr = 10 ** (-4 + 0.5 * i)
            t.add(depth, 0.2 + 0.1 * abs(i - 3) + 0.001 * depth, lr=lr)
    for i in range(12):
        t.add(2, 3.0 + 0.01 * i, step=1 + i % 3, pruned=True, lr=10 ** (-4 + 0.25 * i))
    return t


def test_importance_leaves_out_the_truncated_values() -> None:
    trials = learning_rate_study().trials
    shares = parameter_importance(spec(), trials, seed=0)
    assert shares["learning_rate"] > 0.8 > shares["depth"]
    # The same trials with every value counted (no max_steps): depth takes the variance.
    unfiltered = parameter_importance(spec(max_steps=None), trials, seed=0)
    assert unfiltered["depth"] > unfiltered["learning_rate"]


# -- 3. a late winner --------------------------------------------------------------------------

def test_a_late_winner_is_found_on_its_full_budget_trials() -> None:
    t = Trials()
    t.full(1, [0.50 + 0.01 * i for i in range(12)])
    t.stopped(2, 9)
    t.full(2, [0.20, 0.21, 0.22])
    iso = one(isolate(spec(), t.trials))
    assert iso.verdict == VERDICT_DIFFERS and iso.best_value == 2
    assert iso.gap == pytest.approx(0.30)
    assert iso.detail.startswith("depth=2 is best (val_loss 0.2 vs 0.5 for depth=1)")
    assert "early stopping stopped 9 of 12 trials of depth=2" in iso.detail


# -- 4. no pruned trial: today's results -------------------------------------------------------

def test_a_study_without_pruned_trials_gives_the_same_results_with_or_without_max_steps(
) -> None:
    t = Trials()
    t.full(1, [0.30 + 0.01 * i for i in range(12)])
    t.full(2, [0.50 + 0.02 * i for i in range(12)])
    t.add(2, 0.45, step=3)  # completed short of max_steps (its loop ended): still counts
    with_budget, without = isolate(spec(), t.trials), isolate(spec(None), t.trials)
    assert with_budget == without
    iso = one(with_budget)
    assert iso.verdict == VERDICT_DIFFERS and "early stopping" not in iso.detail
    assert all(p.stopped == 0 for p in iso.points) and point(iso, 2).trials == 13
    assert (parameter_importance(spec(), t.trials)
            == parameter_importance(spec(None), t.trials))


# -- every surface -----------------------------------------------------------------------------

def study_record(s: StudySpec, trials: Sequence[TrialRecord]) -> StudyRecord:
    return StudyRecord(id=1, name=s.name, state=StudyState.COMPLETED, metric=s.metric,
                       mode=s.mode, searcher=s.searcher, spec_text="", spec_file="stopped.yaml",
                       created_at=0.0, total_trials=len(trials))


def stopped_study() -> tuple[StudySpec, StudyRecord, list[TrialRecord]]:
    t = Trials()
    t.full(1, [0.3378 + 0.01 * i for i in range(12)])
    t.stopped(2, 11, value=1.401)
    t.full(2, [0.35])
    s = spec()
    return s, study_record(s, t.trials), t.trials


def test_the_findings_and_the_report_section_show_the_stopped_early_verdict() -> None:
    s, study, trials = stopped_study()
    analysis = analyze(study, s, trials)
    [iso] = analysis.isolation
    assert iso.verdict == VERDICT_STOPPED_EARLY
    [finding] = [f for f in analysis.findings if STOPPED_EARLY_TEXT in f]
    assert "early stopping stopped 11 of 12 trials of depth=2" in finding
    assert not any("is best" in f and "depth=" in f for f in analysis.findings)
    # The best trial is still the study's best, pruned trials included.
    assert analysis.summary.best_trials[0].value == pytest.approx(0.3378)

    section = IsolationSection()
    data = json.loads(json.dumps(section.data(study, analysis)))
    [entry] = data["isolation"]
    assert entry["verdict"] == "stopped_early" and STOPPED_EARLY_TEXT in entry["detail"]
    by_value = {p["value"]: p for p in entry["points"]}
    assert (by_value[2]["trials"], by_value[2]["stopped"], by_value[2]["best"]) == (1, 11, 0.35)
    assert (by_value[1]["trials"], by_value[1]["stopped"]) == (12, 0)

    context = ReportContext(study, s, tuple(trials), analysis)
    md = "\n".join(section.markdown(context, []))
    assert f"**depth** — stopped_early: depth=2: {STOPPED_EARLY_TEXT}" in md
    assert "| depth | best val_loss | trial | trials | stopped early |" in md
    assert "| 2 | 0.35 | 23 | 1 | 11 of 12 |" in md
    assert "| 1 | 0.3378 | 0 | 12 | 0 of 12 |" in md

    [plot] = isolation_plots(s, analysis)
    assert plot.title == "Isolation: depth — stopped_early"
    assert plot.best.y == pytest.approx((0.3378, 0.35))  # full-budget values only
    assert max(plot.spread.y) < 1  # no truncated value drawn as an arm's result

    html = section.html(context, FIGURE)
    assert STOPPED_EARLY_TEXT in html  # the template shows the detail of every verdict
    text = re.sub(r"\s+", " ", str(html))
    assert "<td>11 of 12</td>" in text and "<td>0.35</td>" in text


def test_the_report_section_is_unchanged_without_stopped_trials() -> None:
    t = Trials()
    t.full(1, [0.30 + 0.01 * i for i in range(12)])
    t.full(2, [0.50 + 0.02 * i for i in range(12)])
    s = spec()
    study = study_record(s, t.trials)
    analysis = analyze(study, s, t.trials)
    context = ReportContext(study, s, tuple(t.trials), analysis)
    section = IsolationSection()
    md = section.markdown(context, [])
    assert "| depth | best val_loss | trial | trials |" in md
    assert "| 1 | 0.3 | 0 | 12 |" in md and "stopped early" not in "\n".join(md)
    assert "stopped early" not in str(section.html(context, FIGURE))
    assert not any("early stopping" in f for f in analysis.findings)
