"""The plot data both renderers draw: where infeasible trials sit for each mode, and which
trials a large study shows. Records are built directly: no database, no plotting."""

from __future__ import annotations

import operator
from dataclasses import replace

import pytest

from searchsvc.core import TrialState
from searchsvc.core.judging import by_value
from searchsvc.report.sections.axes import MAX_POINTS, axis_plots, shown_trials, worst_edge
from tests.report.studies import make_trials, study_spec

INFEASIBLE = {3, 17, 42}


@pytest.mark.parametrize("mode", ["max", "min"])
def test_infeasible_trials_sit_at_the_worst_edge_never_where_good_results_are(mode: str):
    # The PNGs used to draw them at max(feasible) whatever the mode: the *best* height for max.
    spec = study_spec(mode)
    trials = make_trials(60, infeasible=INFEASIBLE)
    feasible = [t.best_value for t in trials if t.best_value is not None]
    worst = min(feasible) if mode == "max" else max(feasible)
    not_better = operator.le if mode == "max" else operator.ge  # "below" in the study's sense
    plots = axis_plots(spec, trials)
    assert [p.parameter for p in plots] == ["width", "learning_rate", "dropout"]
    for plot in plots:
        drawn = sorted(y for arm in plot.arms for y in arm.y)
        assert drawn == sorted(feasible)  # every feasible trial once, in its arm
        assert plot.infeasible is not None
        assert sorted(plot.infeasible.text) == sorted(f"trial {n} diverged" for n in INFEASIBLE)
        assert plot.infeasible.y == (worst,) * len(INFEASIBLE)
        assert all(not_better(y, v) for y in plot.infeasible.y for v in drawn)
        assert plot.y_label == f"best accuracy ({mode})"


def test_a_trial_that_diverged_after_a_finite_value_is_drawn_there_as_infeasible():
    trials = make_trials(20)
    trials[5] = replace(trials[5], state=TrialState.INFEASIBLE, best_value=0.5)
    plot = axis_plots(study_spec("max"), trials)[1]
    assert plot.infeasible is not None and plot.infeasible.y == (0.5,)
    assert 0.5 not in [y for arm in plot.arms for y in arm.y]


def test_the_worst_edge_ignores_missing_and_non_finite_values():
    values = [0.3, None, float("nan"), 0.7, float("inf"), 0.5]
    assert worst_edge(values, "max") == 0.3
    assert worst_edge(values, "min") == 0.7
    assert worst_edge([None, float("nan")], "max") == 1.0  # nothing finite: still a height


def test_axis_scales_edges_and_arms_follow_the_spec():
    width, rate, dropout = axis_plots(study_spec("max"), make_trials(30))
    assert (width.x_log, width.edges) == (False, None)  # a choice: no range to mark
    assert (rate.x_log, rate.edges) == (True, (1e-4, 1.0))
    assert (dropout.x_log, dropout.edges) == (False, (0.0, 0.5))
    assert [a.name for a in rate.arms] == ["width=64", "width=256"]
    assert rate.title == "accuracy vs learning_rate (nuisance)"
    assert rate.key == "axis-learning_rate"


def test_past_max_points_the_best_quarter_and_a_seeded_sample_are_shown():
    spec = study_spec("max")
    trials = make_trials(MAX_POINTS + 500, infeasible=range(0, MAX_POINTS + 500, 97))
    shown = shown_trials(spec, trials)
    assert len(shown) == MAX_POINTS
    assert [t.number for t in shown] == sorted(t.number for t in shown)
    best = {t.number for t in by_value(trials, "max")[:MAX_POINTS // 4]}
    assert best <= {t.number for t in shown}
    plots = axis_plots(spec, trials)
    assert plots == axis_plots(spec, trials)  # seeded: the same plots every time
    for plot in plots:
        assert (plot.shown, plot.total) == (MAX_POINTS, MAX_POINTS + 500)
        assert plot.title.endswith(f"({MAX_POINTS} of {MAX_POINTS + 500} trials)")
        assert plot.infeasible is not None
        assert sum(len(a.x) for a in plot.arms) + len(plot.infeasible.x) == MAX_POINTS
