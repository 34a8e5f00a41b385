"""The figure of the campaigns documentation page (docs/campaigns.md): three rounds of a
planted study whose best learning rate (0.05) lies above the first round's range, each round
the previous one's suggested next study, analysed and recorded as ``searchsvc next`` records
them, drawn by the report's own PNG code.

    .venv/bin/python benchmarks/campaign_figure.py [--figure docs/campaign.png]
"""

from __future__ import annotations

import argparse
import math
import random
import textwrap
from collections.abc import Mapping
from typing import Any

from searchsvc import usecases
from searchsvc.analysis import StudyAnalysis, analyze
from searchsvc.analysis.campaign import CAMPAIGN_KEY, decisions, first_round, next_round
from searchsvc.core import StudyRecord
from searchsvc.report.charts.campaign import campaign_plot, draw_campaign_plot
from searchsvc.spec import parse_spec
from searchsvc.store import InMemoryStore
from searchsvc.testing.planted import Rows, planted_study

FIRST = """
study: lr
objective: objectives.synthetic:playbook
metric: val_loss
mode: min
searcher: quasi_random
budget: {trials: 24, max_concurrent: 4, max_steps: 12}
parameters:
  learning_rate: {role: nuisance, low: 1.0e-4, high: 1.0e-2, scale: log}
  weight_decay: {role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}
"""


def curve(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
    """Converges to a loss that is lowest at a learning rate of 0.05, whatever the decay."""
    final = 0.2 + 0.1 * (math.log10(config["learning_rate"]) - math.log10(0.05)) ** 2
    return [{"val_loss": final + (2.0 - final) * math.exp(-0.5 * s) + rng.gauss(0, 0.002)}
            for s in range(1, steps + 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", default="docs/campaign.png")
    args = parser.parse_args()
    store = InMemoryStore()
    text = textwrap.dedent(FIRST)
    parent: tuple[StudyRecord, StudyAnalysis] | None = None
    for _ in range(3):
        planted = planted_study(text, curve, store=store)
        record = (first_round(planted.study, planted.spec) if parent is None
                  else next_round(parent[0], decisions(parent[1])))
        study = store.update_study(planted.study.name, provenance={
            **planted.study.provenance, CAMPAIGN_KEY: record})
        parent = study, analyze(study, planted.spec, planted.trials)
        text = parent[1].next_study.text
        parse_spec(text)
    found = usecases.campaign("lr", store)
    for r in found.rounds:
        print(r.round, r.study, r.best_value, [d.text for d in r.decisions])
    plot = campaign_plot(found)
    assert plot is not None
    draw_campaign_plot(plot).savefig(args.figure)


if __name__ == "__main__":
    main()
