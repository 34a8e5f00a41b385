"""Does early stopping decide the science? The isolation verdicts of planted studies whose
scientific arms learn at different speeds, under each early-stopping rule, against the verdicts
the same trials give with full curves.

The planted study (``objectives/planted_arms.py``): ``depth`` and ``width`` are scientific,
``learning_rate`` a nuisance parameter; depth 2 and width 2 start far worse than depth 1 and
width 1. At the full budget the depths **tie** (right verdict: within_noise) and width 2 is the
**late winner** (right verdict: differs, width 2 best). Each study: 24 trials of 9 steps, 2 at
a time, `noise: off` (the labelled proxy judges the verdicts).

The rules: the `asha`, `hyperband` and `bohb` searchers with their own rungs (grace 1, rf 3;
BOHB's default quota promotion), and `quasi_random` with an `early_stopping:` block for the
`median` and `percentile` (keep 0.5) rules. The trials are proposed by each study's real
searcher and trained on the planted curves; the stops are those of the replay
(`analysis/replay.py`), which runs the deciders the live scheduler runs
(`searchers/stopping.py`; `tests/driver/test_replay_agrees_with_ray.py` checks that the study's
scheduler stops what the replay predicts, and `tests/driver/test_early_stopping_on_ray.py` runs
these studies on a real Ray).

Three ways, per rule, over the seeds:
- **within arms**: today's rules (each arm its own rungs) and today's report (arms compared on
  trials that reached the full budget);
- **across arms, old report**: the rungs Ray Tune's Hyperband keeps (one for the whole study)
  and a report that ranks every trial's best, truncated ones included: the verdicts before;
- **across arms, today's report**: the same stops, with today's report, which says "cannot
  compare" where an arm kept too few full trials instead of a wrong verdict.

A study agrees when both its verdicts equal the ones its own trials give with full curves
(whether those are right is its own column: a searcher's proposals decide that, not early
stopping). Target: within arms, at least 90% per rule.

    .venv/bin/python benchmarks/early_stopping_arms.py [--seeds 10] [--trials 36]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from objectives.planted_arms import RULES, loss_at
from searchsvc.analysis.isolation import VERDICT_DIFFERS, VERDICT_WITHIN_NOISE, isolate
from searchsvc.spec import StudySpec, parse_spec
from searchsvc.testing.planted import planted_study, stopped_early

RIGHT = {"depth": VERDICT_WITHIN_NOISE, "width": VERDICT_DIFFERS}
CONCURRENCY = 2


def study_text(searcher: str, options: str, seed: int, trials: int) -> str:
    return f"""
study: arms
objective: objectives.planted_arms:slow_arms
metric: loss
mode: min
searcher: {searcher}
{options}
budget: {{trials: {trials}, max_steps: 9, max_concurrent: {CONCURRENCY}}}
noise: off
seed: {seed}
parameters:
  depth: {{role: scientific, values: [1, 2]}}
  width: {{role: scientific, values: [1, 2]}}
  learning_rate: {{role: nuisance, low: 1.0e-3, high: 1.0e-1, scale: log}}
"""


def planted(config, rng, steps):  # type: ignore[no-untyped-def]
    return [{"loss": loss_at(config, step, steps, rng)} for step in range(1, steps + 1)]


def verdicts(spec: StudySpec, trials: list) -> dict[str, str]:  # type: ignore[type-arg]
    found = {i.parameter: i for i in isolate(spec, trials, None)}
    out = {name: i.verdict for name, i in found.items()}
    if out.get("width") == VERDICT_DIFFERS and "width=2 is best" not in found["width"].detail:
        out["width"] = "differs, wrong way"
    return out


def old_report(spec: StudySpec) -> StudySpec:
    """The spec as the report saw it before arms were compared on full-budget trials only:
    with no step budget, every trial's best counts, truncated or not."""
    return replace(spec, budget=replace(spec.budget, max_steps=None))


def run(rule: str, seed: int, trials: int) -> dict[str, object]:
    searcher, options = RULES[rule]
    _, spec, full = planted_study(study_text(searcher, options, seed, trials), planted)
    reference = verdicts(spec, full)
    within = stopped_early(spec, full, concurrency=CONCURRENCY)
    across = stopped_early(spec, full, concurrency=CONCURRENCY, per_arm=False)
    return {"reference_right": reference == RIGHT,
            "within": verdicts(spec, within) == reference,
            "across_old": verdicts(old_report(spec), across) == reference,
            "across_old_wrong": sum(v not in (reference[k], "insufficient_data") for k, v in
                                    verdicts(old_report(spec), across).items()),
            "across_new": verdicts(spec, across) == reference,
            "stopped_within": sum(t.state == "pruned" for t in within),
            "stopped_across": sum(t.state == "pruned" for t in across)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--trials", type=int, default=24)
    args = parser.parse_args()
    parse_spec(study_text("quasi_random", RULES["median"][1], 0, args.trials))  # fails early
    started = time.monotonic()
    print(f"{args.trials} trials of 9 steps, {CONCURRENCY} at a time, seeds 0-{args.seeds - 1}\n")
    print("| rule | full curves right | within arms agree | across arms, old report agree "
          "(wrong verdicts) | across arms, today's report agree | trials stopped within / "
          "across |")
    print("|---|---|---|---|---|---|")
    passed = True
    for rule in RULES:
        rows = [run(rule, seed, args.trials) for seed in range(args.seeds)]
        n = len(rows)

        def share(key: str, rows: list = rows) -> str:  # type: ignore[type-arg]
            return f"{sum(bool(r[key]) for r in rows)}/{len(rows)}"

        wrong = sum(int(r["across_old_wrong"]) for r in rows)  # type: ignore[call-overload]
        stopped_in = sum(int(r["stopped_within"]) for r in rows) / n  # type: ignore[call-overload]
        stopped_x = sum(int(r["stopped_across"]) for r in rows) / n  # type: ignore[call-overload]
        print(f"| {rule} | {share('reference_right')} | {share('within')} | "
              f"{share('across_old')} ({wrong}) | {share('across_new')} | "
              f"{stopped_in:.1f} / {stopped_x:.1f} |")
        passed &= sum(bool(r["within"]) for r in rows) >= 0.9 * n
    print(f"\nwithin arms, every rule at least 90%: {'PASS' if passed else 'FAIL'} "
          f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
