"""The PNG axis plots (matplotlib) draw the shared plot data: infeasible trials at the worst
edge for the study's mode, and the same downsampled points as the HTML report's Plotly
figures. Checked on the artists' data before saving, not by comparing images."""

from __future__ import annotations

import operator
import warnings
from pathlib import Path

import numpy as np
import pytest

from searchsvc.report.sections.axes import (
    INFEASIBLE_NAME,
    MAX_POINTS,
    AxisPlot,
    axis_figure,
    axis_plots,
    axis_pngs,
    draw_axis_plot,
)
from tests.report.studies import make_trials, study_spec

Points = dict[str, list[tuple[float, float]]]


def png_points(plot: AxisPlot) -> Points:
    """Each scatter the PNG would save, by legend label: its (x, y) in data coordinates."""
    [ax] = draw_axis_plot(plot).axes
    return {str(c.get_label()): [(float(x), float(y)) for x, y in np.asarray(c.get_offsets())]
            for c in ax.collections}


def plotly_points(plot: AxisPlot) -> Points:
    return {t.name: [(float(x), float(y)) for x, y in zip(t.x, t.y, strict=True)]
            for t in axis_figure(plot).data}


def data_points(plot: AxisPlot) -> Points:
    series = [*plot.arms, *([plot.infeasible] if plot.infeasible else [])]
    return {s.name: [(float(x), y) for x, y in zip(s.x, s.y, strict=True)] for s in series}


@pytest.mark.parametrize("mode", ["max", "min"])
def test_png_draws_infeasible_trials_below_every_feasible_value_in_the_modes_sense(mode: str):
    trials = make_trials(60, infeasible={3, 17, 42})
    not_better = operator.le if mode == "max" else operator.ge
    for plot in axis_plots(study_spec(mode), trials):
        drawn = png_points(plot)
        bad = [y for _, y in drawn.pop(INFEASIBLE_NAME)]
        feasible = [y for points in drawn.values() for _, y in points]
        assert len(bad) == 3 and len(feasible) == 57
        assert all(not_better(b, v) for b in bad for v in feasible), plot.parameter
        if mode == "max":  # the old bug: crosses at the top, where the best trials are
            assert max(bad) < max(feasible)


def test_both_renderers_draw_the_same_downsampled_points():
    trials = make_trials(MAX_POINTS + 500, infeasible=range(0, MAX_POINTS + 500, 97))
    for plot in axis_plots(study_spec("max"), trials):
        expected = data_points(plot)
        assert sum(map(len, expected.values())) == MAX_POINTS  # not every trial: downsampled
        assert png_points(plot) == expected, plot.parameter
        assert plotly_points(plot) == expected, plot.parameter


def test_pngs_keep_their_file_names(tmp_path: Path):
    plots = axis_plots(study_spec("min"), make_trials(12, infeasible={2}))
    paths = axis_pngs(plots, tmp_path / "plots")
    assert [p.name for p in paths] == ["axis_width.png", "axis_learning_rate.png",
                                       "axis_dropout.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in paths)


def test_a_range_with_no_trial_to_place_spans_its_declared_range_without_a_warning() -> None:
    # every trial failed: nothing to scatter, only the declared range's edges (log scale)
    empty = AxisPlot("axis-lr", "lr", "lr", "lr", "loss", True, (0.01, 1.0), None, (), None, 0, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        [ax] = draw_axis_plot(empty).axes
    assert ax.get_xlim() == pytest.approx((0.01, 1.0))
