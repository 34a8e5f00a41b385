"""Campaign records (analysis/campaign.py): the decisions behind a next study carry their
evidence, rounds number on from the parent's, and the timeline reads back from both stores."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest

from searchsvc import usecases
from searchsvc.analysis import analyze
from searchsvc.analysis.campaign import (
    CAMPAIGN_KEY,
    campaign_name,
    decisions,
    first_round,
    membership,
    next_round,
    space,
)
from searchsvc.store import InMemoryStore, SqlStore, Store
from searchsvc.testing.planted import Rows, planted_study

SPEC = """
study: {name}
objective: objectives.synthetic:playbook
metric: loss
mode: min
searcher: quasi_random
budget: {{trials: 8, max_steps: 6, max_concurrent: 2}}
{parent}
parameters:
  learning_rate: {{role: nuisance, low: {low}, high: 1.0, scale: log}}
  batch_size: {{role: fixed, value: 32}}
"""


def never_crossing(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
    level = abs(math.log10(config["learning_rate"]) + 2)
    return [{"loss": level + 1.0 / s} for s in range(1, steps + 1)]


def spec_text(name: str, parent: str | None = None, low: float = 1e-4) -> str:
    return SPEC.format(name=name, parent=f"parent: {parent}" if parent else "", low=low)


def test_the_decisions_carry_the_replays_evidence_and_a_hand_edit_is_one_more() -> None:
    study, spec, trials = planted_study(spec_text("c"), never_crossing)
    analysis = analyze(study, spec, trials)
    assert analysis.replay is not None and analysis.replay.recommended is not None
    made = decisions(analysis)
    [stopping] = [d for d in made if d.kind == "early_stopping"]
    assert stopping.text == next(line for line in analysis.next_study.changes
                                 if line.startswith("early_stopping: "))
    assert stopping.evidence["early_stopping"] == analysis.replay.recommended.rule.as_block()
    assert stopping.evidence["replay"]["setting"] == analysis.replay.recommended.rule.label
    assert stopping.evidence["replay"]["step_saving"] == analysis.replay.recommended.step_saving
    assert len(made) == len(analysis.next_study.changes)  # one decision per change
    assert [d.kind for d in decisions(analysis, edited=True)][-1] == "edited"


def test_rounds_number_on_from_the_parent_within_its_campaign() -> None:
    study, spec, _ = planted_study(spec_text("c"), never_crossing)
    assert membership(study) is None and campaign_name(study) == "c"
    assert next_round(study, [])["round"] == 2  # a parent in no campaign is round 1
    one = replace(study, provenance={CAMPAIGN_KEY: first_round(study, spec)})
    two = replace(study, name="c-next", provenance={CAMPAIGN_KEY: next_round(one, [])})
    record = next_round(two, [])
    assert (record["name"], record["round"], record["parent"]) == ("c", 3, "c-next")
    assert space(spec) == ("learning_rate (nuisance): [0.0001, 1] log",
                           "batch_size (fixed): = 32")


@pytest.fixture(params=["sqlite", "postgresql", "memory"])
def any_store(request: pytest.FixtureRequest, tmp_path) -> Iterator[Store]:
    if request.param == "sqlite":
        yield SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    elif request.param == "memory":
        yield InMemoryStore()
    else:
        yield SqlStore(request.getfixturevalue("postgres_url"))


def test_a_campaign_reads_back_from_every_store(any_store: Store) -> None:
    one = planted_study(spec_text("c"), never_crossing, store=any_store)
    two = planted_study(spec_text("c-next", "c", low=1e-3), never_crossing, store=any_store)
    planted_study(spec_text("other"), never_crossing, store=any_store)
    parent = any_store.update_study("c", provenance={
        **one.study.provenance, CAMPAIGN_KEY: first_round(one.study, one.spec)})
    analysis = analyze(parent, one.spec, one.trials)
    any_store.update_study("c-next", provenance={
        **two.study.provenance, CAMPAIGN_KEY: next_round(parent, decisions(analysis))})
    found = usecases.campaign("c", any_store)
    assert [(r.round, r.study, r.parent) for r in found.rounds] == [
        (1, "c", None), (2, "c-next", "c")]
    assert found.rounds[1].decisions == tuple(decisions(analysis))
    assert found.rounds[1].space[0] == "learning_rate (nuisance): [0.001, 1] log"
    assert [r.steps for r in found.rounds] == [48, 48]
    assert usecases.campaign("other", any_store).rounds[0].study == "other"
    with pytest.raises(Exception, match="no campaign named 'nope'"):
        usecases.campaign("nope", any_store)


def test_a_scientific_value_that_differs_beyond_seed_noise_is_fixed_with_its_verdict() -> None:
    from searchsvc.testing.planted import noise_text, seed_noise

    study, spec, trials = planted_study(noise_text(2, 3), seed_noise(8.0), repeats=True)
    analysis = analyze(study, spec, trials)
    [verdict] = analysis.isolation
    assert verdict.verdict == "differs" and verdict.best_value == "a"
    fixed = [d for d in decisions(analysis) if d.kind == "fixed"]
    assert [(d.evidence["value"], d.evidence["verdict"]) for d in fixed] == [("a", "differs")]
    assert "variant: fixed at a (its verdict: a differs beyond seed noise)" in \
        analysis.next_study.changes
    null = analyze(*planted_study(noise_text(2, 3), seed_noise(0.0), repeats=True))
    assert not [d for d in decisions(null) if d.kind == "fixed"]


def test_a_range_widened_by_a_boundary_check_carries_the_check() -> None:
    def best_above_the_range(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
        final = 0.2 + 0.1 * (math.log10(config["learning_rate"]) + 1.3) ** 2
        return [{"loss": final + 1.0 / s} for s in range(1, steps + 1)]

    text = spec_text("edge").replace("high: 1.0", "high: 0.01").replace("trials: 8", "trials: 24")
    analysis = analyze(*planted_study(text, best_above_the_range))
    [widened] = [d for d in decisions(analysis) if d.kind == "range"]
    assert widened.text.startswith("learning_rate: [0.0001, 0.01] -> ")
    assert widened.evidence["boundary_check"] == "near_high"
    assert widened.evidence["was"] == [1e-4, 0.01] and widened.evidence["now"][1] > 0.01
