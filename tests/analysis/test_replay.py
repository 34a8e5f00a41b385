"""Early stopping replayed on planted curves (analysis/replay.py): what each rule would have
stopped, saved and kept, and which setting the replay recommends."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from searchsvc.analysis.next_study import early_stopping_edit
from searchsvc.analysis.replay import (
    ReplayCurve,
    Rule,
    full_curve_trials,
    interleave,
    replay_rule,
    replay_study,
)
from searchsvc.core import Measurement, TrialRecord, TrialState
from searchsvc.core.curve import Curve
from searchsvc.report.sections.replay import replay_plot
from searchsvc.spec import StudySpec, parse_spec

STEP_SECONDS = 36.0  # 0.01 hours a step


def trial(number: int, values: Sequence[float], *, state: str = TrialState.COMPLETED,
          timed: bool = True) -> TrialRecord:
    """A finished trial that reported ``values`` at steps 1, 2, ... (mode min), each step
    taking :data:`STEP_SECONDS` of working time when ``timed``."""
    measurements = tuple(
        Measurement(step, v, {"loss": v}, telemetry={"step_time_s": STEP_SECONDS} if timed
                    else {})
        for step, v in enumerate(values, 1))
    best = min(range(len(values)), key=lambda i: (values[i], i))
    return TrialRecord(id=number + 1, study_id=1, number=number, state=state,  # type: ignore[arg-type]
                       config={"x": number}, arm={}, seed=number, started_at=float(number),
                       best_value=values[best], best_step=best + 1, last_step=len(values),
                       measurements=measurements)


def slow_winner_study() -> list[TrialRecord]:
    """Eight steps. Trials 0 and 1 are the 3rd and 2nd best (each better than the one before,
    so no rung stops them), 2 and 3 middling; trial 4, the winner, is the worst of all for its
    first three steps and the best from step 4 on; 5 to 8 are poor throughout."""
    def flat(level: float) -> list[float]:
        return [level + 0.5 / s for s in range(1, 9)]

    winner = [3.0, 3.0, 3.0, 0.5, 0.45, 0.4, 0.35, 0.3]
    return [trial(0, flat(1.0)), trial(1, flat(0.9)), trial(2, flat(1.5)), trial(3, flat(1.6)),
            trial(4, winner), *(trial(n, flat(2.0 + 0.1 * n)) for n in range(5, 9))]


def test_asha_with_a_short_grace_kills_the_slow_winner_and_the_replay_keeps_a_longer_one(
        ) -> None:
    found = replay_study(slow_winner_study(), "loss", "min", 8, kinds=("asha",))
    assert found.top_k == (4, 1, 0)
    by_label = {s.rule.label: s for s in found.settings}
    assert set(by_label) == {"asha grace=1 rf=2", "asha grace=2 rf=2", "asha grace=4 rf=2",
                             "asha grace=1 rf=3", "asha grace=2 rf=3"}
    short = by_label["asha grace=1 rf=2"]
    assert short.stopped[4] == 1 and short.top_k[4] is False and not short.keeps_top_k
    assert short.best_value == pytest.approx(0.9 + 0.5 / 8)  # the winner never finished
    assert found.recommended is not None
    assert found.recommended.rule == Rule("asha", 4, 2.0)
    # Trials 2, 3 and 5 to 8 stop at the rung at step 4: 6 x 4 of 9 x 8 steps saved.
    assert found.recommended.stopped == {n: 4 for n in (2, 3, 5, 6, 7, 8)}
    assert found.recommended.step_saving == pytest.approx(24 / 72)
    assert found.recommended.best_value == pytest.approx(0.3)
    assert found.recommended.rank_correlation is not None
    assert found.recommended.rank_correlation > short.rank_correlation  # type: ignore[operator]


def test_the_median_and_percentile_rules_judging_early_also_stop_the_slow_winner() -> None:
    found = replay_study(slow_winner_study(), "loss", "min", 8,
                         kinds=("median", "percentile"))
    for s in found.settings:
        assert (4 in s.stopped) == (s.rule.grace_period < 4), s.rule.label


def perfect_ranking_study() -> list[TrialRecord]:
    """Nine steps, nine trials whose curves never cross: every step ranks them as the end does.
    Trials 0, 1, 2 are the 3rd, 2nd and best (each better than those before); 3 to 8 are worse
    than all of them."""
    levels = [0.3, 0.2, 0.1, 0.9, 0.6, 0.8, 0.5, 0.7, 0.4]
    return [trial(n, [c + 1.0 / s for s in range(1, 10)]) for n, c in enumerate(levels)]


def test_when_early_rungs_rank_perfectly_the_replay_recommends_the_aggressive_setting() -> None:
    found = replay_study(perfect_ranking_study(), "loss", "min", 9, gpu_per_trial=1.0)
    best = found.recommended
    assert best is not None and best.rule == Rule("asha", 1, 3.0)
    # By hand: the top three run all 9 steps, the six others stop after their first step.
    assert best.stopped == {n: 1 for n in range(3, 9)}
    assert (best.steps_total, best.steps_run) == (81, 3 * 9 + 6)
    assert best.step_saving == pytest.approx(48 / 81)
    assert best.gpu_hours_saved == pytest.approx(48 * STEP_SECONDS / 3600)
    assert best.top_k == {2: True, 1: True, 0: True}
    assert best.rank_correlation == pytest.approx(1.0)
    assert best.best_value == pytest.approx(0.1 + 1 / 9)
    assert "saves 59% of the steps" in found.reason


def test_no_setting_keeps_the_top_trials_then_early_stopping_is_called_unsafe() -> None:
    # The three best trials are the worst of all until step 7, after four steady ones.
    trials = [trial(n, [1.0 + 0.1 * n] * 8) for n in range(4)]
    trials += [trial(4 + n, [9.0 - n] * 6 + [0.5 - 0.1 * n] * 2) for n in range(3)]
    found = replay_study(trials, "loss", "min", 8)
    assert found.recommended is None
    assert found.reason.startswith("early stopping is unsafe for this objective")
    assert "rank correlation" in found.reason


def test_concurrency_interleaves_the_trials_and_a_stop_frees_a_slot() -> None:
    curves = [ReplayCurve(n, Curve((s, float(n)) for s in (1, 2, 3))) for n in range(3)]
    order = [(r.number, r.step) for r in interleave(curves, 2, {0: 1})]
    # 0 and 1 start together; 0 stops after step 1, so 2 starts in its slot at once.
    assert order == [(0, 1), (1, 1), (1, 2), (2, 1), (1, 3), (2, 2), (2, 3)]
    assert [(r.number, r.step) for r in interleave(curves, 1)] == [
        (n, s) for n in range(3) for s in (1, 2, 3)]


def test_the_order_the_trials_ran_in_decides_who_is_stopped() -> None:
    curves = [ReplayCurve(n, Curve((s, v) for s, v in enumerate(vals, 1)))
              for n, vals in enumerate([[1.0, 1.0, 1.0, 1.0], [2.0, 0.5, 0.5, 0.5]])]
    rule = Rule("asha", 1, 2.0)
    assert replay_rule(rule, curves, 4, "min", concurrency=1) == {1: 1}
    assert replay_rule(rule, curves, 4, "min", concurrency=2) == {1: 1}
    # Trial 1 first: trial 0 passes the rung at step 1 but is below 1's value at step 2.
    assert replay_rule(rule, list(reversed(curves)), 4, "min", concurrency=1) == {0: 2}


def test_a_study_that_already_stopped_trials_has_no_full_curves() -> None:
    trials = perfect_ranking_study()
    assert full_curve_trials(trials, 9) == trials
    assert full_curve_trials(trials, None) == []
    assert full_curve_trials(trials[:3], 9) == []  # too few
    pruned = [*trials[:-1], trial(8, [1.0, 1.0], state=TrialState.PRUNED)]
    assert full_curve_trials(pruned, 9) == []


def test_without_telemetry_no_gpu_hours_are_claimed() -> None:
    trials = [trial(n, [c + 1.0 / s for s in range(1, 10)], timed=False)
              for n, c in enumerate([0.3, 0.2, 0.1, 0.9, 0.6])]
    found = replay_study(trials, "loss", "min", 9, gpu_per_trial=1.0)
    assert found.recommended is not None and found.recommended.gpu_hours_saved is None


def test_maximised_metrics_are_replayed_the_right_way_up() -> None:
    flipped = [trial(t.number, [-m.value for m in t.measurements])  # type: ignore[operator]
               for t in perfect_ranking_study()]
    flipped = [TrialRecord(**{**t.__dict__, "best_value": max(m.value for m in t.measurements),  # type: ignore[type-var]
                              })
               for t in flipped]
    found = replay_study(flipped, "loss", "max", 9)
    assert found.top_k == (2, 1, 0)
    assert found.recommended is not None and found.recommended.step_saving == pytest.approx(48 / 81)


def _spec(searcher: str, options: str = "") -> StudySpec:
    return parse_spec(f"""
study: s
objective: objectives.synthetic:playbook
metric: loss
mode: min
searcher: {searcher}
{options}
budget: {{trials: 9, max_steps: 9}}
parameters:
  x: {{role: nuisance, values: [0, 1, 2, 3, 4, 5, 6, 7, 8]}}
""")


def test_the_next_study_adopts_the_recommended_rule_as_an_early_stopping_block() -> None:
    """Any rule the replay recommends becomes a runnable ``early_stopping:`` block beside the
    study's own searcher, median and percentile included; a searcher that stops trials itself
    is only told."""
    found = replay_study(perfect_ranking_study(), "loss", "min", 9)
    adopted = early_stopping_edit(_spec("random"), found)
    assert dict(adopted.block) == {"rule": "asha", "grace_period": 1, "reduction_factor": 3.0}
    assert early_stopping_edit(_spec("bayesian", "searcher_options: {sampler: gp}"),
                               found).block == adopted.block
    median = replay_study(perfect_ranking_study(), "loss", "min", 9, kinds=("median",))
    assert median.recommended is not None
    assert dict(early_stopping_edit(_spec("grid"), median).block) == {
        "rule": "median", "grace_period": median.recommended.rule.grace_period}
    percentile = replay_study(perfect_ranking_study(), "loss", "min", 9, kinds=("percentile",))
    assert percentile.recommended is not None
    assert dict(early_stopping_edit(_spec("random"), percentile).block)["keep"] in (0.5, 0.25)
    told = early_stopping_edit(_spec("pbt", "searcher_options: {perturbation_interval: 3}"),
                               found)
    assert told.block == () and "searcher 'pbt' pauses trials" in told.describe()


def test_the_next_studys_file_runs_the_block_it_was_given() -> None:
    from searchsvc.spec.edits import write_edited

    spec = _spec("random")
    found = replay_study(perfect_ranking_study(), "loss", "min", 9)
    text = write_edited(spec, [early_stopping_edit(spec, found)])
    again = parse_spec(text)
    assert again.searcher == "random"
    assert again.early_stopping == found.recommended.rule  # type: ignore[union-attr]


def test_the_replay_plot_splits_the_settings_by_whether_they_keep_the_top_trials() -> None:
    found = replay_study(slow_winner_study(), "loss", "min", 8)
    plot = replay_plot(found)
    assert plot is not None and plot.recommended == found.recommended.rule.label  # type: ignore[union-attr]
    assert len(plot.kept.x) == sum(s.keeps_top_k for s in found.settings)
    assert len(plot.lost.x) == sum(not s.keeps_top_k for s in found.settings)
    assert plot.full_best == pytest.approx(0.3)


def test_curves_read_without_their_measurements_are_not_replayed() -> None:
    trials = perfect_ranking_study()
    unread = [*trials[:-1], TrialRecord(**{**trials[-1].__dict__, "measurements": ()})]
    assert full_curve_trials(unread, 9) == []


def test_a_setting_that_stops_a_top_trial_within_noise_of_the_best_keeps_the_best() -> None:
    """The three best trials end within 0.01 of each other, and the third of them starts
    worst of all: a top-3 rule would call every stopping setting unsafe, while the best the
    study finds under ASHA is within the noise of its best with full curves."""
    finals = [0.50, 0.51, 0.52, 0.9, 0.95, 1.0, 1.05]
    starts = [1.0, 1.0, 5.0, 1.5, 1.6, 1.7, 1.8]
    trials = [trial(n, [f + (s - f) / step for step in range(1, 10)])
              for n, (f, s) in enumerate(zip(finals, starts, strict=True))]
    found = replay_study(trials, "loss", "min", 9, kinds=("asha",))
    stops_third = [s for s in found.settings if 2 in s.stopped]
    assert stops_third and not any(s.keeps_top_k for s in stops_third)
    assert all(s.keeps_best for s in stops_third)  # 0.51 is within the spread of the top 3
    assert found.recommended is not None and 2 in found.recommended.stopped
    assert "[proxy: no seed repeats" in found.reason


def test_seed_repeats_measure_the_noise_the_best_is_kept_within() -> None:
    noisy = replay_study(slow_winner_study(), "loss", "min", 8, kinds=("asha",), noise=1.0,
                         noise_method="seed_repeats")
    assert all(s.keeps_best for s in noisy.settings)  # 0.66 lost is within a noise of 1.0
    assert "within seed noise (sd 1, from the seed repeats)" in noisy.reason
    tight = replay_study(slow_winner_study(), "loss", "min", 8, kinds=("asha",), noise=0.01,
                         noise_method="seed_repeats")
    assert not tight.settings[0].keeps_best
    assert tight.settings[0].best_kept_text().startswith("no: study 0.6")


def two_arm_study() -> list[TrialRecord]:
    """Arm depth=1 learns fast, depth=2 slowly; both end at the same best (0.3) and the same
    ranks within each arm."""
    out = []
    for n in range(12):
        depth, level = 1 + n % 2, 0.3 + 0.05 * (n // 2)
        slow = 1.0 if depth == 1 else 6.0
        t = trial(n, [level + slow / step**2 for step in range(1, 10)])
        out.append(TrialRecord(**{**t.__dict__, "config": {"depth": depth, "lr": n},
                                  "arm": {"depth": depth}}))
    return out


def test_rules_judged_within_each_arm_keep_the_slow_arms_best_and_across_arms_lose_it() -> None:
    trials = two_arm_study()
    within = replay_study(trials, "loss", "min", 9, kinds=("asha",), scientific=("depth",))
    across = replay_study(trials, "loss", "min", 9, kinds=("asha",), scientific=("depth",),
                          per_arm=False)
    short = Rule("asha", 1, 3.0)
    mine = next(s for s in within.settings if s.rule == short)
    theirs = next(s for s in across.settings if s.rule == replace(short, per_arm=False))
    slow = {t.number for t in trials if t.config["depth"] == 2}
    assert mine.keeps_best and set(mine.shortfall) == {"depth=1", "depth=2"}
    assert slow <= set(theirs.stopped) and not theirs.keeps_best  # the whole slow arm stopped
    assert theirs.best_kept_text().startswith("no: depth=2")
    assert within.recommended is not None and within.recommended.rule.per_arm
