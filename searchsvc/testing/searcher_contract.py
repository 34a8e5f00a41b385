"""The contract every registered searcher passes, as a reusable pytest suite.

Subclass :class:`SearcherContract` and give it a ``variant`` fixture over
:func:`searcher_params` (every registered searcher, with the options worth checking apart)::

    class TestSearchers(SearcherContract):
        @pytest.fixture(params=searcher_params())
        def variant(self, request):
            return request.param

What it checks, for each variant, on a study space with scientific arms, nuisance ranges (linear,
log, int, stepped), choices, a fixed value and ``when:`` conditions on scientific and nuisance
parents (or, for searchers that refuse it, an all-discrete one):

- every proposal lies inside the space, scientific parameters take their arm's values, fixed
  ones their value, and a conditional parameter is present exactly when its condition holds;
- a log range is searched on its log scale;
- resuming: a searcher re-created and fed the finished observations proposes what the original
  did next (variants with ``exact_resume``), or at least valid proposals that its model learnt
  the history from (adaptive ones);
- no NaN or infinity ever reaches a searcher or its model, whatever the observations held,
  live or replayed from a store (checked at every model entry point, see
  :func:`model_inputs`, so a searcher that bypasses :class:`Observation`'s cleaning fails too).

A newly registered searcher gets the default variant (no options, exact resume): list it in
:data:`KNOWN_VARIANTS` when it is adaptive or has options worth checking apart.
"""

from __future__ import annotations

import json
import math
import numbers
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from searchsvc.core import Curve, TrialState, is_finite_number
from searchsvc.searchers import (
    Observation,
    Proposal,
    Searcher,
    check_spec,
    create_searcher,
    searcher_names,
)
from searchsvc.spec import ChoiceParameter, FixedParameter, RangeParameter, StudySpec, parse_spec

NAN, INF = float("nan"), float("inf")
MAX_STEPS = 9
HISTORY = 16  # trials finished before a resume; the study has 24 (or the whole grid)

# What every contract study file starts with: the searcher under test and its options.
STUDY_HEAD = """\
study: contract
objective: contract:objective
metric: loss
mode: min
searcher: {searcher}
searcher_options: {options}
seed: 3
"""
# Scientific arms (one conditional), every kind of nuisance range, a choice conditional on a
# nuisance parent, and a fixed value.
MIXED_SPACE = STUDY_HEAD + """\
budget: {{trials: 24, max_steps: 9}}
parameters:
  optimizer: {{role: scientific, values: [adam, sgd]}}
  depth: {{role: scientific, type: int, values: [1, 2], when: {{optimizer: [sgd]}}}}
  lr: {{role: nuisance, low: 1.0e-4, high: 1.0, scale: log}}
  momentum: {{role: nuisance, low: 0.5, high: 0.99, when: {{optimizer: [sgd]}}}}
  width: {{role: nuisance, type: int, low: 8, high: 64, step: 8}}
  filters: {{role: nuisance, type: int, low: 4, high: 256, scale: log}}
  layers: {{role: nuisance, type: int, low: 1, high: 3}}
  units_2: {{role: nuisance, type: int, values: [16, 32], when: {{layers: [2, 3]}}}}
  activation: {{role: nuisance, values: [relu, tanh]}}
  dropout: {{role: nuisance, low: 0.0, high: 0.5, step: 0.1}}
  batch_size: {{role: fixed, value: 64}}
"""
# The same shapes with discrete values only (grid search), and no trial budget: the whole grid.
DISCRETE_SPACE = STUDY_HEAD + """\
budget: {{max_steps: 9}}
parameters:
  optimizer: {{role: scientific, values: [adam, sgd]}}
  lr: {{role: nuisance, values: [0.001, 0.01]}}
  momentum: {{role: nuisance, values: [0.5, 0.9], when: {{optimizer: [sgd]}}}}
  layers: {{role: nuisance, type: int, low: 1, high: 2}}
  units_2: {{role: nuisance, type: int, values: [16, 32], when: {{layers: [2]}}}}
  dropout: {{role: nuisance, low: 0.0, high: 0.1, step: 0.1}}
  batch_size: {{role: fixed, value: 64}}
"""
SPACES = (MIXED_SPACE, DISCRETE_SPACE)


@dataclass(frozen=True)
class Variant:
    """A searcher with ``options``, and what the contract expects of it."""

    searcher: str
    options: Mapping[str, Any] = field(default_factory=dict)
    # A re-created searcher fed the same observations proposes the same configs next. False for
    # models whose random state each proposal advances (a resumed one has not proposed those).
    exact_resume: bool = True
    learns: bool = False  # observations reach a model (checked at its entry points)
    slow: bool = False  # a model expensive enough to leave to `make test`

    @property
    def id(self) -> str:
        return self.searcher + "".join(f"-{k}={v}" for k, v in self.options.items())


KNOWN_VARIANTS: dict[str, list[Variant]] = {
    "bayesian": [Variant("bayesian", {}, exact_resume=False, learns=True),
                 Variant("bayesian", {"sampler": "gp"}, exact_resume=False, learns=True,
                         slow=True),
                 Variant("bayesian", {"sampler": "hyperopt"}, exact_resume=False, learns=True)],
    "bohb": [Variant("bohb", {}, exact_resume=False, learns=True)],
    "hyperband": [Variant("hyperband"),
                  Variant("hyperband", {"proposer": "bayesian"}, exact_resume=False,
                          learns=True)],
    "keras_tuner": [Variant("keras_tuner", {"oracle": "random"}, learns=True),
                    # 7 random points per arm first: of the 8 trials each arm gets, the GP
                    # proposes the last (each KerasTuner GP proposal costs seconds on a
                    # loaded CPU).
                    Variant("keras_tuner", {"oracle": "bayesian", "initial_points": 7},
                            exact_resume=False, learns=True, slow=True)],
    "nas": [Variant("nas"),
            Variant("nas", {"strategy": "tpe"}, exact_resume=False, learns=True)],
    "pbt": [Variant("pbt"), Variant("pbt", {"variant": "pb2"})],
}


def searcher_variants(names: Sequence[str] | None = None) -> list[Variant]:
    """The variants of every registered searcher (or of ``names``)."""
    return [v for name in (searcher_names() if names is None else names)
            for v in KNOWN_VARIANTS.get(name, [Variant(name)])]


def searcher_params(names: Sequence[str] | None = None) -> list[Any]:
    """:func:`searcher_variants` as pytest params: named, and slow ones marked ``slow``."""
    return [pytest.param(v, id=v.id, marks=[pytest.mark.slow] if v.slow else [])
            for v in searcher_variants(names)]


def contract_spec(variant: Variant) -> StudySpec:
    """The first of :data:`SPACES` the variant's searcher accepts (AssertionError with every
    refusal when it accepts none)."""
    refusals = []
    for space in SPACES:
        spec = parse_spec(space.format(searcher=variant.searcher,
                                       options=json.dumps(dict(variant.options))))
        issues = check_spec(spec)
        if not issues:
            return spec
        refusals += [issue.render() for issue in issues]
    raise AssertionError(f"{variant.id} refuses every contract space:\n" + "\n".join(refusals))


def evaluate(config: Mapping[str, Any]) -> float:
    """A deterministic, finite loss: small positive numbers (lr near 1e-3) are best."""
    loss = 0.0
    for value in config.values():
        if isinstance(value, bool) or not isinstance(value, int | float):
            loss += 0.1 * (len(str(value)) % 3)
        elif value > 0:
            loss += abs(math.log10(value) + 3)
        else:
            loss += 1.0
    return loss


def finished(number: int, config: Mapping[str, Any]) -> Observation:
    """A completed trial that reported every step, its loss falling to ``evaluate(config)``."""
    final = evaluate(config)
    curve = Curve((step, final + 1 / step) for step in range(1, MAX_STEPS + 1))
    return Observation(number, dict(config), curve[-1][1], TrialState.COMPLETED, curve=curve)


def contaminated(number: int, config: Mapping[str, Any]) -> Observation:
    """A finished trial whose value and curve hold NaN or infinities, at the steps multi-fidelity
    searchers read (1, 3, 9), in one of four shapes by ``number``. The curve is a plain list,
    as any caller may pass one: Observation must clean it."""
    v = evaluate(config)
    value, state, curve = {
        0: (NAN, TrialState.COMPLETED, [(1, NAN), (2, v + 1), (3, INF), (4, v), (9, NAN)]),
        1: (INF, TrialState.INFEASIBLE, [(1, v), (2, v), (3, NAN), (4, -INF)]),
        2: (-INF, TrialState.PRUNED, [(1, -INF), (2, v), (3, NAN)]),
        3: (NAN, TrialState.FAILED, [(1, INF)]),
    }[number % 4]
    raw: Any = curve
    return Observation(number, dict(config), value, state, curve=raw)


# -- what reaches searchers and models ----------------------------------------------------------

@dataclass
class ModelInputs:
    """Every call recorded by :func:`model_inputs`: (where, the numbers in its arguments)."""

    calls: list[tuple[str, list[float]]] = field(default_factory=list)

    @property
    def model_calls(self) -> list[tuple[str, list[float]]]:
        """The calls into models (not into searchers' ``observe``)."""
        return [c for c in self.calls if not c[0].endswith(".observe")]

    def non_finite(self) -> list[tuple[str, float]]:
        return [(where, x) for where, xs in self.calls for x in xs if not math.isfinite(x)]


def _entry_points() -> list[tuple[type, str]]:
    """(class, method) pairs through which observations reach searchers and their models:
    every searcher's ``observe``, every per-arm model's and BOHB's ``tell``, and the libraries'
    own entry points (Optuna, hpbandster, KerasTuner) when they are imported."""
    from searchsvc.searchers.bohb_model import BohbModel
    from searchsvc.searchers.models import ArmModel

    points = [(cls, "observe") for cls in _with_subclasses(Searcher) if "observe" in vars(cls)]
    points += [(cls, "tell") for cls in (*_with_subclasses(ArmModel), BohbModel)
               if "tell" in vars(cls)]
    if "optuna" in sys.modules:
        from optuna.study import Study

        points += [(Study, "tell"), (Study, "add_trial")]
    bohb = sys.modules.get("hpbandster.optimizers.config_generators.bohb")
    if bohb is not None:
        points.append((bohb.BOHB, "new_result"))
    if "keras_tuner" in sys.modules:
        import keras_tuner

        points += [(cls, "update_trial") for cls in _with_subclasses(keras_tuner.Oracle)
                   if "update_trial" in vars(cls)]
    return points


def _with_subclasses(cls: type) -> list[type]:
    found = [cls]
    sub: type
    for sub in cls.__subclasses__():
        found += [c for c in _with_subclasses(sub) if c not in found]
    return found


@contextmanager
def model_inputs() -> Iterator[ModelInputs]:
    """Record the numbers in the arguments of every call through :func:`_entry_points` made
    while the block runs (patched on the classes, so models created inside count too). Import
    the libraries a searcher uses (propose once) before entering."""
    recorded = ModelInputs()
    originals = []
    for cls, name in _entry_points():
        original = vars(cls)[name]
        originals.append((cls, name, original))
        setattr(cls, name, _recording(original, f"{cls.__name__}.{name}", recorded))
    try:
        yield recorded
    finally:
        for cls, name, original in reversed(originals):
            setattr(cls, name, original)


def _recording(method: Callable[..., Any], where: str, recorded: ModelInputs
               ) -> Callable[..., Any]:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        recorded.calls.append((where, list(numbers_in((args, kwargs)))))
        return method(self, *args, **kwargs)

    return call


def numbers_in(value: Any, depth: int = 0) -> Iterator[float]:
    """The real numbers in ``value``: inside mappings, sequences, and the attributes of the
    objects passed (one level: an Observation's, an Optuna trial's, an hpbandster job's)."""
    if isinstance(value, bool) or depth > 8:
        return
    if isinstance(value, numbers.Real):
        yield float(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from numbers_in(item, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from numbers_in(item, depth + 1)
    elif depth <= 2 and hasattr(value, "__dict__") and not isinstance(value, type):
        for name, item in vars(value).items():
            if not name.startswith("__") and not isinstance(item, Searcher):
                yield from numbers_in(item, 8 if _is_object(item) else depth + 1)


def _is_object(value: Any) -> bool:
    """Not plain data: a study, a sampler, a storage... (not followed further)."""
    return hasattr(value, "__dict__") and not isinstance(value, Mapping | list | tuple)


# -- checks -------------------------------------------------------------------------------------

def check_proposal(spec: StudySpec, searcher: Searcher, proposal: Proposal, number: int) -> None:
    """AssertionError unless ``proposal`` is a valid trial ``number`` of ``spec``: inside the
    space, roles and conditions kept."""
    config = dict(proposal.config)
    where = f"trial {number} of {spec.searcher} {dict(spec.searcher_options)}: {config}"
    assert proposal.number == number, where
    assert proposal.arm in searcher.arms, f"{where}: arm {proposal.arm} is not the study's"
    assert isinstance(proposal.seed, int) and 0 <= proposal.seed < 2**31, where
    assert set(config) <= set(spec.parameters), f"{where}: unknown parameters"
    scientific = {k: v for k, v in config.items() if spec.parameters[k].role == "scientific"}
    assert scientific == dict(proposal.arm.values), f"{where}: not its arm's {proposal.arm}"
    for name, param in spec.parameters.items():
        active = param.is_active(config)
        assert (name in config) == active, (
            f"{where}: {name} {'missing' if active else 'present'} though its condition "
            f"{'holds' if active else 'does not hold'}")
        if name not in config:
            continue
        value = config[name]
        if isinstance(param, FixedParameter):
            assert value == param.value, f"{where}: fixed {name} changed"
        elif isinstance(param, ChoiceParameter):
            assert param.takes(value), f"{where}: {name}={value!r} is not one of its values"
        else:
            assert isinstance(param, RangeParameter)
            assert is_finite_number(value), f"{where}: {name}={value!r} is not a number"
            assert param.low <= value <= param.high, f"{where}: {name}={value} out of range"
            if param.kind == "int":
                assert isinstance(value, int), f"{where}: {name}={value!r} is not an int"
            if param.step is not None:
                assert param.takes(value), f"{where}: {name}={value} is off its step grid"


def check_study(spec: StudySpec, searcher: Searcher, proposals: Sequence[Proposal]) -> None:
    """What holds over a whole study: every arm gets trials, seeds differ, and a log range is
    searched on its log scale (a quarter or more of its values below its geometric middle,
    where a linear search puts about 1%)."""
    assert {p.arm.index for p in proposals} == {a.index for a in searcher.arms}, (
        "an arm got no trial")
    assert len({p.seed for p in proposals}) == len(proposals), "two trials share a seed"
    for name, param in spec.parameters.items():
        if isinstance(param, RangeParameter) and param.scale == "log":
            values = [p.config[name] for p in proposals if name in p.config]
            middle = math.sqrt(param.low * param.high)
            assert len(values) >= 8 and sum(v < middle for v in values) >= len(values) / 4, (
                f"{name} is not searched on its log scale: {sorted(values)}")


def drive(searcher: Searcher, numbers: Sequence[int],
          observation: Callable[[int, Mapping[str, Any]], Observation] = finished,
          ) -> tuple[list[Proposal], list[Observation]]:
    """Propose, then observe, each of ``numbers`` in turn (one trial at a time)."""
    proposals, observations = [], []
    for number in numbers:
        proposals.append(searcher.propose(number))
        observations.append(observation(number, proposals[-1].config))
        searcher.observe(observations[-1])
    return proposals, observations


class SearcherContract:
    """Tests every searcher passes; a subclass supplies the ``variant`` fixture."""

    @pytest.fixture
    def variant(self) -> Variant:
        raise NotImplementedError("a subclass of SearcherContract provides the variants")

    def test_every_proposal_lies_in_the_space_with_roles_and_conditions(
            self, variant: Variant) -> None:
        spec = contract_spec(variant)
        searcher = create_searcher(spec)
        proposals, _ = drive(searcher, range(searcher.total_trials))
        for number, proposal in enumerate(proposals):
            check_proposal(spec, searcher, proposal, number)
        check_study(spec, searcher, proposals)

    def test_a_resumed_searcher_goes_on_as_the_original_would(self, variant: Variant) -> None:
        spec = contract_spec(variant)
        original = create_searcher(spec)
        total = original.total_trials
        history = min(HISTORY, total - 4)
        _, observations = drive(original, range(history))
        # what the original proposes next, for the variants that must propose it again
        expected = drive(original, range(history, total))[0] if variant.exact_resume else []
        resumed = create_searcher(spec)
        with model_inputs() as seen:
            for observation in observations:
                resumed.observe(observation)
        got, _ = drive(resumed, range(history, total))
        for proposal in got:
            check_proposal(spec, resumed, proposal, proposal.number)
        if variant.exact_resume:
            assert [dict(p.config) for p in got] == [dict(p.config) for p in expected], (
                "a resumed searcher proposes other configs than the original")
            assert [(p.arm, p.seed) for p in got] == [(p.arm, p.seed) for p in expected]
        if variant.learns:  # the replayed history reached the model, every trial of it
            assert len(seen.model_calls) >= history, (
                f"{history} trials replayed, {len(seen.model_calls)} calls into the model")

    def test_an_interrupted_trial_is_proposed_again_on_resume(self, variant: Variant) -> None:
        spec = contract_spec(variant)
        original = create_searcher(spec)
        _, observations = drive(original, range(8))
        resumed = create_searcher(spec)
        for observation in observations[:5] + observations[6:]:  # trial 5 never finished
            resumed.observe(observation)
        for number in (5, 8, 9):  # numbers arrive in order, with the gap first
            check_proposal(spec, resumed, resumed.propose(number), number)

    def test_no_non_finite_value_reaches_the_searcher_or_its_model(self,
                                                                   variant: Variant) -> None:
        spec = contract_spec(variant)
        searcher = create_searcher(spec)
        history = min(HISTORY, searcher.total_trials - 4)
        proposals = [searcher.propose(n) for n in range(history)]  # imports what it uses
        with model_inputs() as seen:
            for proposal in proposals:
                searcher.observe(contaminated(proposal.number, proposal.config))
            later, _ = drive(searcher, range(history, searcher.total_trials))
            replayed = create_searcher(spec)  # and a resumed study, replaying the same
            for proposal in proposals:
                replayed.observe(contaminated(proposal.number, proposal.config))
            replayed_later, _ = drive(replayed, range(history, searcher.total_trials))
        assert seen.non_finite() == [], f"non-finite values got through: {seen.non_finite()}"
        assert seen.calls, "no observation reached the searcher"
        if variant.learns:
            assert seen.model_calls, "no observation reached the model"
        for proposal in later + replayed_later:
            check_proposal(spec, searcher, proposal, proposal.number)


__all__ = [
    "DISCRETE_SPACE",
    "KNOWN_VARIANTS",
    "MIXED_SPACE",
    "ModelInputs",
    "SearcherContract",
    "Variant",
    "check_proposal",
    "check_study",
    "contaminated",
    "contract_spec",
    "drive",
    "evaluate",
    "finished",
    "model_inputs",
    "numbers_in",
    "searcher_params",
    "searcher_variants",
]
