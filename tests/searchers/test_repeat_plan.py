"""Which configurations the seed repeats rerun, and in which trial slots (pure: records built
directly)."""

from __future__ import annotations

from searchsvc.core import TrialRecord, TrialState
from searchsvc.searchers import create_searcher
from searchsvc.searchers.repeats import plan_repeats
from searchsvc.spec import parse_spec

SPEC = """
study: plan
objective: objectives.synthetic:noisy
metric: loss
mode: {mode}
searcher: random
budget: {{trials: 9}}
noise: {{top_k: 2, seeds: 2}}
parameters:
  variant: {{role: scientific, values: [a, b, c]}}
  x: {{low: 0.0, high: 1.0}}
"""


def trial(number: int, arm: str, value: float | None, state: str = TrialState.COMPLETED
          ) -> TrialRecord:
    return TrialRecord(id=number, study_id=1, number=number, state=state,
                       config={"variant": arm, "x": number / 10}, arm={"variant": arm},
                       seed=number, best_value=value)


def test_each_arms_best_completed_configs_then_pruned_ones_fill_in_fixed_slots() -> None:
    spec = parse_spec(SPEC.format(mode="max"))
    searcher = create_searcher(spec)
    trials = [trial(0, "a", 0.5), trial(1, "a", 0.9), trial(2, "a", 0.7),
              trial(3, "b", 0.99, TrialState.PRUNED), trial(4, "b", 0.2),
              trial(5, "c", None, TrialState.FAILED), trial(6, "c", 0.3, TrialState.PRUNED),
              trial(7, "c", 0.1, TrialState.PRUNED), trial(8, "c", 0.6, TrialState.PRUNED)]
    plan = plan_repeats(spec, spec.noise, searcher.arms, trials, 9)  # type: ignore[arg-type]
    # mode max: a's best are 1 (0.9) and 2 (0.7); b's completed 4 comes before pruned 3;
    # c has only pruned trials: its best two, 8 and 6. Slots 9 + (arm*2 + rank)*2 + seed.
    assert [(p.number, p.repeat_of) for p in plan] == [
        (9, 1), (10, 1), (11, 2), (12, 2), (13, 4), (14, 4), (15, 3), (16, 3),
        (17, 8), (18, 8), (19, 6), (20, 6)]
    assert all(p.config == trials[p.repeat_of].config for p in plan)  # type: ignore[index]
    assert len({p.seed for p in plan} | {t.seed for t in trials}) == len(plan) + len(trials)


def test_an_arm_with_no_usable_trial_gets_no_repeats_and_leaves_its_slots_empty() -> None:
    spec = parse_spec(SPEC.format(mode="min"))
    searcher = create_searcher(spec)
    trials = [trial(0, "a", 0.5), trial(1, "b", None, TrialState.FAILED), trial(2, "c", 0.4)]
    plan = plan_repeats(spec, spec.noise, searcher.arms, trials, 9)  # type: ignore[arg-type]
    assert [(p.number, p.repeat_of) for p in plan] == [(9, 0), (10, 0), (17, 2), (18, 2)]
