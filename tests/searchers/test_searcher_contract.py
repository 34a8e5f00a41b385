"""Every registered searcher passes the searcher contract (searchsvc.testing.searcher_contract);
and the regression the contract was written for: a resumed BOHB study, replayed from the store
with NaN in its trials' curves, never tells its model a NaN."""

from __future__ import annotations

import math

import pytest

from searchsvc.core import Curve, TrialState
from searchsvc.searchers import Observation, create_searcher, searcher_names
from searchsvc.store.memory import InMemoryStore
from searchsvc.testing.searcher_contract import (
    KNOWN_VARIANTS,
    MIXED_SPACE,
    SearcherContract,
    Variant,
    contract_spec,
    model_inputs,
    searcher_params,
    searcher_variants,
)


class TestSearcherContract(SearcherContract):
    @pytest.fixture(params=searcher_params())
    def variant(self, request: pytest.FixtureRequest) -> Variant:
        return request.param


def test_the_contract_covers_every_registered_searcher_and_no_other() -> None:
    assert {v.searcher for v in searcher_variants()} == set(searcher_names())
    assert set(KNOWN_VARIANTS) <= set(searcher_names())
    assert all(v.searcher == name for name, vs in KNOWN_VARIANTS.items() for v in vs)


def test_the_spy_sees_a_nan_given_to_a_model_directly() -> None:
    """What a searcher that bypassed Observation would do: the contract's spy must see it."""
    searcher = create_searcher(contract_spec(Variant("bohb")))
    searcher.propose(0)
    config = dict(searcher.propose(1).config)
    with model_inputs() as seen:
        searcher.models[0].tell(config, 1, math.nan)
    assert [where for where, _ in seen.non_finite()] == ["BohbModel.tell", "BOHB.new_result"]


@pytest.mark.parametrize("name", ["bayesian", "bohb", "nas", "keras_tuner"])
def test_the_contract_fails_a_searcher_when_observations_keep_non_finite_values(
        monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A regression in Observation's (or Curve's) cleaning must fail the contract."""
    import searchsvc.core.curve
    import searchsvc.searchers.base

    def keep_everything(value: object) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool)

    monkeypatch.setattr(searchsvc.core.curve, "is_finite_number", keep_everything)
    monkeypatch.setattr(searchsvc.searchers.base, "is_finite_number", keep_everything)
    assert math.isnan(Observation(0, {}, math.nan, TrialState.COMPLETED).value)  # broken indeed
    variant = searcher_variants([name])[0]
    with pytest.raises(AssertionError, match="non-finite values got through"):
        SearcherContract().test_no_non_finite_value_reaches_the_searcher_or_its_model(variant)


def bohb_study(store: InMemoryStore, curves: dict[int, list[tuple[int, float]]]) -> str:
    """A BOHB study whose trials ``curves`` ran and finished (NaN reports: infeasible), stored
    as the driver stores them; returns the spec text."""
    text = MIXED_SPACE.format(searcher="bohb", options="{}")
    spec = contract_spec(Variant("bohb"))
    searcher = create_searcher(spec)
    study = store.create_study(name="bohb", metric="loss", mode="min", searcher="bohb",
                               spec_text=text, spec_file="-", total_trials=24,
                               results_dir=None, provenance={})
    for number, curve in curves.items():
        proposal = searcher.propose(number)
        trial = store.start_trial(study.id, number=number, config=proposal.config,
                                  arm=proposal.arm.values, seed=proposal.seed)
        store.record_measurements(trial.id, 1, "min", [(s, v, {"loss": v}) for s, v in curve])
        diverged = any(not math.isfinite(v) for _, v in curve)
        store.finish_trial(trial.id, TrialState.INFEASIBLE if diverged else TrialState.COMPLETED)
    return text


def test_a_resumed_bohb_study_never_tells_its_model_a_nan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from searchsvc.searchers.bohb_model import BohbModel

    nan = math.nan
    curves = {  # NaN and infinities at BOHB's budgets (steps 1, 3, 9) and between them
        0: [(1, 2.0), (2, 1.5), (3, nan), (4, nan)],
        1: [(1, nan)],
        2: [(s, 1.0 / s) for s in range(1, 9)] + [(9, nan)],
        3: [(s, 0.5 + 1.0 / s) for s in range(1, 10)],
        4: [(1, 3.0), (2, math.inf), (3, 2.0)],
    }
    store = InMemoryStore()
    bohb_study(store, curves)
    # The replay of driver/run.py: every finished trial, with its curve of the study's metric.
    history = [Observation(t.number, t.config, t.best_value, t.state, curve=t.curve("loss"))
               for t in store.get_trials("bohb", measurements=True) if t.finished]
    resumed = create_searcher(contract_spec(Variant("bohb")))
    assert resumed.budgets == [1, 3, 9]
    resumed.models  # noqa: B018 - builds the models (and imports hpbandster) before the spies
    told: list[tuple[float, float | None]] = []
    tell = BohbModel.tell

    def recording_tell(self: BohbModel, config: dict, budget: float,
                       value: float | None) -> None:
        told.append((budget, value))
        tell(self, config, budget, value)

    monkeypatch.setattr(BohbModel, "tell", recording_tell)
    with model_inputs() as seen:
        for observation in history:
            resumed.observe(observation)
    assert seen.non_finite() == []  # nor anything hpbandster's own model was given
    # What the live study told it: the last finite report at or before each budget reached.
    expected: list[tuple[float, float | None]] = []
    for curve in curves.values():
        live = Curve(curve)
        expected += [(b, live.value_at(b)) for b in resumed.budgets
                     if live.last_step is not None and live.last_step >= b] or [(1, None)]
    assert told == expected
    assert (3, 2.0) in told and (1, None) in told  # trials 4 and 1: NaN skipped, not told
    for number in range(5, 8):  # and it proposes on from what it learnt
        resumed.propose(number)
