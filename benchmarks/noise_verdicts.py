"""How often the scientific verdict says "differs", with seed repeats against the proxy.

Simulated studies with planted seed noise (searchsvc.testing.planted: the real random
searcher proposes 10 trials per value of a scientific parameter, the real planner picks each
value's top 2 configurations to rerun; only training is simulated, value = truth + N(0, sigma)).
Value ``a`` is better than the others by the planted effect (0: a null, where any "differs" is
a false alarm). For each design, the rate of "differs" (for the planted winner) over the
studies, by:
- searchsvc's verdict with repeats (means over seeds, simultaneous 95% intervals on the measured
  seed noise), and
- the proxy the report uses, labelled, with `noise: off`: the gap between the values'
  best single trials against twice the spread of each value's top 3 trials.

Targets: a 3-sigma effect called "differs" in at least 90% of studies, a null in at
most 5%.

    .venv/bin/python benchmarks/noise_verdicts.py [--studies 200]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from searchsvc.testing.planted import differs_rates, rates_table

DESIGNS = [(2, 3), (2, 4), (3, 3), (3, 5)]  # (values, seeds per repeated config)
EFFECTS = [0.0, 1.0, 2.0, 3.0, 4.0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--studies", type=int, default=200)
    args = parser.parse_args()
    started = time.monotonic()
    rows = [differs_rates(effect, values, seeds, args.studies,
                          first_seed=10_000 if effect == 0 else 0)
            for values, seeds in DESIGNS for effect in EFFECTS]
    print(rates_table(rows))
    print()
    for values, seeds in DESIGNS:
        mine = {r.effect_sigmas: r for r in rows if (r.values, r.seeds) == (values, seeds)}
        power, null = mine[3.0].repeats, mine[0.0].repeats
        verdict = "PASS" if power >= 0.9 and null <= 0.05 else "FAIL"
        print(f"{values} values, {seeds} seeds: 3-sigma effect {power:.1%} (>= 90%), null "
              f"{null:.1%} (<= 5%): {verdict}")
    print(f"\n{len(rows) * args.studies} simulated studies in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
