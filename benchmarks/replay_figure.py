"""The figure of the early-stopping replay's documentation page (docs/early-stopping.md): a
planted study of 24 trials, 16 steps each, whose three best trials start slowly (worse than
most until step 4), replayed by the report's own code and drawn by the report's own PNG code.

    .venv/bin/python benchmarks/replay_figure.py [--figure docs/replay.png]
"""

from __future__ import annotations

import argparse
import random

from searchsvc.analysis.replay import replay_study
from searchsvc.core import Measurement, TrialRecord, TrialState
from searchsvc.report.sections.replay import draw_replay_plot, replay_plot

STEPS, TRIALS = 16, 24
SLOW = {5, 11, 17}  # the late bloomers: the study's three best trials


def curve(number: int, rng: random.Random) -> list[float]:
    """A validation error falling from about 0.9 to the trial's own final level; a late
    bloomer stays near 0.9 for three steps, then falls below everyone else."""
    final = rng.uniform(0.12, 0.3) if number in SLOW else rng.uniform(0.3, 0.6)
    slow = 3 if number in SLOW else 0
    return [0.9 if s <= slow else final + (0.9 - final) / (s - slow) ** 1.5
            + rng.gauss(0, 0.01) for s in range(1, STEPS + 1)]


def planted(seed: int = 0) -> list[TrialRecord]:
    rng = random.Random(seed)
    trials = []
    for n in range(TRIALS):
        values = curve(n, rng)
        best = min(range(STEPS), key=values.__getitem__)
        trials.append(TrialRecord(
            id=n + 1, study_id=1, number=n, state=TrialState.COMPLETED, config={}, arm={}, seed=n,
            started_at=float(n), best_value=values[best], best_step=best + 1, last_step=STEPS,
            measurements=tuple(Measurement(s, v, {"val_error": v}, telemetry={
                "step_time_s": 90.0}) for s, v in enumerate(values, 1))))
    return trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", default="docs/replay.png")
    args = parser.parse_args()
    replay = replay_study(planted(), "val_error", "min", STEPS, concurrency=4, gpu_per_trial=1)
    print(replay.reason)
    plot = replay_plot(replay)
    assert plot is not None
    draw_replay_plot(plot).savefig(args.figure)


if __name__ == "__main__":
    main()
