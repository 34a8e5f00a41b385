"""Each scheduler-based searcher does its job on Ray Tune, end to end through the store.

Trials run concurrently, so which one reaches a rung or a perturbation step first changes from
run to run with machine load. Every assertion here holds for every such interleaving: it checks
each decision a scheduler recorded against the values the store holds. How much the searchers
gain (steps saved for a result within noise, PBT beating its initial population, NAS beating
random search) is measured over several seeds in benchmarks/ (multifidelity.py, pbt.py), never
claimed from one run.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from objectives.synthetic import pbt_toy_gain
from searchsvc.core import EventKind, TrialEvent, TrialRecord, TrialState
from searchsvc.driver import RunOptions, create_study, run_study
from searchsvc.searchers import HyperbandSchedule, PopulationSchedule, create_searcher
from searchsvc.spec import parse_spec
from searchsvc.store import SqlStore, Store
from searchsvc.usecases import validate_text

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SPACES = ROOT / "spaces"
MULTI_FIDELITY = ("asha", "hyperband", "bohb")
# Slack when comparing a percentile Ray interpolated with the values it came from
EPS = 1e-9


def run_text(text: str, store: Store, file: Path) -> None:
    spec = validate_text(text, file=str(file))
    options = RunOptions(live_progress=False)
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    run_study(spec.name, store, options, searcher=searcher)


def with_searcher(text: str, study: str, searcher: str, options: str) -> str:
    text = re.sub(r"(?m)^study: .*$", f"study: {study}", text)
    text = re.sub(r"(?m)^searcher: .*$", f"searcher: {searcher}", text)
    return re.sub(r"(?m)^searcher_options: .*$", f"searcher_options: {options}", text)


def reported(trial: TrialRecord, step: int, key: str) -> Any:
    return next(m.metrics[key] for m in trial.measurements if m.step == step)


# --- Multi-fidelity: asha, hyperband, bohb ------------------------------------------------

# Training-like curves (objectives.synthetic:playbook: each config converges to its own loss,
# with seeded noise), cheap enough that the three studies measure the schedulers, not training.
# The same schedule runs on the digits MLP in spaces/digits_asha.yaml and benchmarks/.
MULTI_FIDELITY_SPACE = """
study: asha
objective: objectives.synthetic:playbook
metric: val_loss
mode: min
searcher: asha
searcher_options: {grace_period: 1, reduction_factor: 3}
budget: {trials: 24, max_concurrent: 2, max_steps: 9}
resources: {cpu: 1}
seed: 0
parameters:
  learning_rate: {role: nuisance, low: 1.0e-4, high: 1.0e-1, scale: log}
  weight_decay:  {role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}
  depth:         {role: nuisance, type: int, values: [1, 2]}
"""


@pytest.fixture(scope="module")
def hyperband_store(ray_local, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The same 24 quasi-random configs of 9 steps, 2 at a time, run by each multi-fidelity
    searcher."""
    folder = tmp_path_factory.mktemp("mf")
    store = SqlStore(f"sqlite:///{folder / 'db.sqlite'}")
    for name in MULTI_FIDELITY:
        options = "{grace_period: 1, reduction_factor: 3}"
        run_text(with_searcher(MULTI_FIDELITY_SPACE, name, name, options), store,
                 folder / f"{name}.yaml")
    return store


class Rungs:
    """A multi-fidelity study as its scheduler saw it: each trial's bracket, its value at each
    step as a loss (lower is better, whatever the study's mode), and each early stop."""

    def __init__(self, store: Store, study: str):
        record = store.get_study(study)
        spec = parse_spec(record.spec_text)
        self.schedule: HyperbandSchedule = create_searcher(spec).schedule()  # type: ignore[assignment]
        self.concurrency = spec.budget.max_concurrent or 1
        self.sign = 1.0 if record.mode == "min" else -1.0
        self.trials = {t.number: t for t in store.get_trials(study, measurements=True)}
        events = store.get_events(study, kind=EventKind.STOPPED_EARLY)
        self.stops: dict[int, TrialEvent] = {e.number: e for e in events}
        assert len(self.stops) == len(events), "a trial was stopped twice"

    def bracket(self, number: int) -> int:
        return self.schedule.bracket_for(number)

    def rungs(self) -> Iterator[tuple[int, int]]:
        """(bracket, rung) of every rung where a trial can be stopped (those below max_steps)."""
        for bracket in range(self.schedule.brackets):
            for rung in self.schedule.milestones(bracket):
                if rung < self.schedule.max_steps:
                    yield bracket, rung

    def reached(self, bracket: int, rung: int) -> list[TrialRecord]:
        """The trials of ``bracket`` that reported step ``rung``, in trial-number order."""
        return [t for t in self.trials.values()
                if self.bracket(t.number) == bracket and (t.last_step or 0) >= rung]

    def loss(self, trial: TrialRecord, step: int) -> float:
        return self.sign * next(m.value for m in trial.measurements if m.step == step)

    def must_stop(self) -> list[tuple[int, int]]:
        """(trial, rung) of each trial strictly worse at a rung than every other trial that
        reached it there, when at least ``concurrency`` of those have lower numbers.

        Trials start in number order with at most ``concurrency`` running, so when such a trial
        started, all but ``concurrency - 1`` of the lower-numbered ones had ended, each recorded
        at the rung with a better value: whatever else had arrived there, any percentile of the
        rung's values was better than the trial's, and it was stopped in every interleaving."""
        found = []
        for bracket, rung in self.rungs():
            reached = self.reached(bracket, rung)
            if len(reached) < 2:
                continue
            worst = max(reached, key=lambda t: self.loss(t, rung))
            others = [self.loss(t, rung) for t in reached if t is not worst]
            earlier = sum(t.number < worst.number for t in reached)
            if self.loss(worst, rung) > max(others) and earlier >= self.concurrency:
                found.append((worst.number, rung))
        return found

    def quota_used_before(self, number: int, bracket: int, rung: int) -> int:
        """How many trials of the rung had gone on, at least, when the rung's quota stopped trial
        ``number``: a full quota is ``ceil((k + 1) / rf)`` of the ``k`` trials recorded there
        before it, and ``k`` counts every lower-numbered trial that reached the rung but the
        ``concurrency - 1`` that may still have been running when it started (see must_stop)."""
        earlier = sum(t.number < number for t in self.reached(bracket, rung))
        recorded = max(earlier - (self.concurrency - 1), 0)
        return max(1, math.ceil((recorded + 1) / self.schedule.reduction_factor))


@pytest.mark.parametrize("searcher", MULTI_FIDELITY)
def test_every_trial_runs_to_max_steps_or_is_stopped_at_a_rung_of_its_bracket(
        hyperband_store: Store, searcher: str) -> None:
    r = Rungs(hyperband_store, searcher)
    top = r.schedule.max_steps
    for t in r.trials.values():
        assert [m.step for m in t.measurements] == list(range(1, (t.last_step or 0) + 1))
        if t.state == TrialState.COMPLETED:
            assert t.last_step == top and t.number not in r.stops
            continue
        assert t.state == TrialState.PRUNED
        bracket = r.bracket(t.number)
        assert t.last_step in r.schedule.milestones(bracket) and t.last_step < top
        event = r.stops[t.number]
        assert (event.step, event.data["rung"], event.data["bracket"]) == (
            t.last_step, t.last_step, bracket)
        assert event.data["value"] == t.measurements[-1].value
        assert f"stopped early by {searcher} at step {t.last_step}" in (t.error or "")
    assert set(r.stops) == {n for n, t in r.trials.items() if t.state == TrialState.PRUNED}
    # The first trial to reach a rung always goes on (no cutoff yet, an empty quota), so each
    # bracket that got trials has one that trained to the end.
    for bracket in {r.bracket(n) for n in r.trials}:
        assert any(t.last_step == top for t in r.trials.values() if r.bracket(t.number) == bracket)


@pytest.mark.parametrize("searcher", MULTI_FIDELITY)
def test_each_early_stop_is_justified_by_the_values_at_its_rung(hyperband_store: Store,
                                                                 searcher: str) -> None:
    r = Rungs(hyperband_store, searcher)
    assert r.stops  # never empty here: see the two tests below
    for number, event in r.stops.items():
        bracket, rung, data = event.data["bracket"], event.data["rung"], event.data
        value = r.sign * data["value"]
        cutoff = None if data["cutoff"] is None else r.sign * data["cutoff"]
        reached = r.reached(bracket, rung)
        if data["reason"] == "below_cutoff":
            assert cutoff is not None and value > cutoff
            # The cutoff is a percentile of values recorded at this rung of this bracket
            # before: it lies among the values other trials reached there.
            others = [r.loss(t, rung) for t in reached if t.number != number]
            assert min(others) - EPS <= cutoff <= max(others) + EPS
        else:
            assert data["reason"] == "rung_quota_full" and r.schedule.promotion == "quota"
            assert "quota" in (r.trials[number].error or "")
            assert cutoff is None or value <= cutoff  # its value alone would have gone on
            went_on = sum((t.last_step or 0) > rung for t in reached)
            assert went_on >= r.quota_used_before(number, bracket, rung)


@pytest.mark.parametrize("searcher", MULTI_FIDELITY)
def test_the_worst_trial_at_a_rung_is_stopped_in_every_interleaving(hyperband_store: Store,
                                                                    searcher: str) -> None:
    r = Rungs(hyperband_store, searcher)
    must_stop = r.must_stop()
    for number, rung in must_stop:
        assert r.trials[number].last_step == rung, (number, rung)
    if r.schedule.promotion == "cutoff":
        # Quasi-random configs and seeded training give the same values in every run, and
        # among them such a trial: without it the cutoff rule need not stop anything.
        assert must_stop


@pytest.mark.parametrize("searcher", ["asha", "hyperband"])
def test_the_cutoff_rule_lets_the_best_trial_at_every_rung_go_on(hyperband_store: Store,
                                                                 searcher: str) -> None:
    r = Rungs(hyperband_store, searcher)
    assert r.schedule.promotion == "cutoff"
    for bracket, rung in r.rungs():
        reached = r.reached(bracket, rung)
        if not reached:
            continue
        best = min(r.loss(t, rung) for t in reached)
        # No percentile of the values recorded at a rung is better than the best of them.
        assert all((t.last_step or 0) > rung for t in reached if r.loss(t, rung) == best)


def test_the_bohb_quota_lets_at_most_a_share_of_each_rung_go_on(hyperband_store: Store) -> None:
    r = Rungs(hyperband_store, "bohb")
    assert r.schedule.promotion == "quota"
    for bracket, rung in r.rungs():
        reached = r.reached(bracket, rung)
        went_on = sum((t.last_step or 0) > rung for t in reached)
        assert went_on <= math.ceil(len(reached) / r.schedule.reduction_factor), (bracket, rung)
    # With two or more trials at a rung the quota stops at least one of them.
    assert any(len(r.reached(b, rung)) >= 2 for b, rung in r.rungs())


# --- Population based training: pbt, pb2 ---------------------------------------------------

def toy_pbt(text: str) -> str:
    """spaces/toy_pbt.yaml with 4 trials in 12 steps, not 8 in 24: five perturbation rounds,
    each with a bottom and a top trial, check every rule here; how much PBT gains over its
    initial population is benchmarks/pbt.py's to measure.

    Half a CPU a trial, so the 4 fill the tests' 2-CPU Ray exactly. With room to spare, Tune
    starts a new worker process for each trial it unpauses and drops it a moment later for the
    worker a pausing trial frees (twice as many processes for the same study); a full cluster,
    as GPUs are in use, leaves the new one waiting until it is dropped."""
    smaller = text.replace("budget: {trials: 8, max_concurrent: 8, max_steps: 24}",
                           "budget: {trials: 4, max_concurrent: 4, max_steps: 12}").replace(
                           "resources: {cpu: 0.25}", "resources: {cpu: 0.5}")
    assert smaller.count("4, max_concurrent: 4") == 1 and "cpu: 0.5}" in smaller
    return smaller


def check_population(store: Store, study: str) -> PopulationSchedule:
    """Checks a synchronous PBT or PB2 study of the pbt toy (one arm, ``learning_rate`` mutated,
    ``score`` and ``learning_rate`` reported each step) as its scheduler decided it; returns its
    schedule."""
    record = store.get_study(study)
    schedule: PopulationSchedule = create_searcher(  # type: ignore[assignment]
        parse_spec(record.spec_text)).schedule()
    assert schedule.synch and record.mode == "max"
    trials = {t.number: t for t in store.get_trials(study, measurements=True)}
    assert [t.state for t in trials.values()] == [TrialState.COMPLETED] * len(trials)
    for t in trials.values():  # every step once, exploited or not
        assert [m.step for m in t.measurements] == list(range(1, schedule.max_steps + 1))
    exploits = store.get_events(study, kind=EventKind.EXPLOIT)
    check_exploits_follow_the_ranking(trials, exploits, schedule)
    for t in trials.values():
        check_lineage(t, [e for e in exploits if e.number == t.number], trials,
                      schedule.max_steps)
    return schedule


def check_exploits_follow_the_ranking(trials: dict[int, TrialRecord], exploits: list[TrialEvent],
                                      schedule: PopulationSchedule) -> None:
    """Synchronous PBT decides when every trial has reached a perturbation step (each one before
    the last): each trial of the bottom ``quantile_fraction`` by score at that step copies one of
    the top ``quantile_fraction``. Which one it picks, and how fast each trial got there, may
    vary; the ranking may not."""
    share = math.ceil(len(trials) * schedule.quantile_fraction)
    interval = schedule.perturbation_interval
    by_step: dict[int, list[TrialEvent]] = defaultdict(list)
    for event in exploits:
        by_step[event.step or 0].append(event)
    assert sorted(by_step) == list(range(interval, schedule.max_steps, interval))
    for step, events in by_step.items():
        assert len({e.number for e in events}) == len(events) == share, step
        scores = {n: reported(t, step, "score") for n, t in trials.items()}
        for event in events:
            target, parent = scores[event.number], scores[event.data["parent"]]
            assert event.data["parent_step"] == step
            assert sum(s < target for s in scores.values()) < share  # in the bottom share
            assert sum(s > parent for s in scores.values()) < share  # in the top share
            assert parent > target


def check_lineage(trial: TrialRecord, exploits: list[TrialEvent],
                  population: dict[int, TrialRecord], max_steps: int) -> None:
    """Every step of ``trial`` adds the toy's gain at the learning rate it trained with to the
    score it went on from: its own, or after an exploit the parent's score at that step (the
    parent's checkpoint restored), then with the explored learning rate (the new config used)."""
    after = {e.step: e for e in exploits}
    assert len(after) == len(exploits)  # one exploit per trial and step
    lr, score = trial.config["learning_rate"], 0.0
    for m in trial.measurements:
        score += pbt_toy_gain(lr, m.step, max_steps)
        assert m.metrics["learning_rate"] == lr, (trial.number, m.step)
        assert m.metrics["score"] == pytest.approx(score, rel=1e-9), (trial.number, m.step)
        event = after.get(m.step)
        if event is None:
            continue
        parent = population[event.data["parent"]]
        assert parent.number != trial.number
        assert event.data["old_config"] == {"learning_rate": lr}
        assert event.data["parent_config"] == {
            "learning_rate": reported(parent, m.step, "learning_rate")}
        score = reported(parent, m.step, "score")
        lr = event.data["new_config"]["learning_rate"]


def test_pbt_exploits_copy_a_better_trial_and_every_step_follows_its_lineage(
        ray_local, tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    path = SPACES / "toy_pbt.yaml"
    run_text(toy_pbt(path.read_text()), store, path)
    schedule = check_population(store, "toy_pbt")
    ladder = schedule.mutations["learning_rate"]
    for event in store.get_events("toy_pbt", kind=EventKind.EXPLOIT):
        assert event.data["new_config"]["learning_rate"] in ladder  # pbt moves on its ladder


# pbt_toy, also reporting the worker process that ran each step
PBT_TOY_WITH_PID = """
import os

from objectives.synthetic import pbt_toy_gain
from searchsvc import sdk


def train(config):
    steps = sdk.max_steps(20)
    state = sdk.restore() or {"score": 0.0, "step": 0}
    score = float(state["score"])
    lr = float(config["learning_rate"])
    for step in range(int(state["step"]) + 1, steps + 1):
        score += pbt_toy_gain(lr, step, steps)
        sdk.report({"score": score, "learning_rate": lr, "worker_pid": os.getpid()},
                   state=lambda score=score, step=step: {"score": score, "step": step})
"""


def test_pb2_explores_within_the_nuisance_bounds_and_every_step_follows_its_lineage(
        ray_local, tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    (tmp_path / "pbt_toy_pid.py").write_text(PBT_TOY_WITH_PID)
    text = with_searcher(toy_pbt((SPACES / "toy_pbt.yaml").read_text()), "toy_pb2", "pbt",
                         "{variant: pb2, perturbation_interval: 2, quantile_fraction: 0.25, "
                         "synch: true}")
    text = re.sub(r"(?m)^objective: .*$", "objective: pbt_toy_pid:train", text)
    run_text(text, store, tmp_path / "toy_pb2.yaml")
    check_population(store, "toy_pb2")
    for event in store.get_events("toy_pb2", kind=EventKind.EXPLOIT):
        assert 1.0e-4 <= event.data["new_config"]["learning_rate"] <= 1.0
    # Paused trials resume on the workers Tune keeps: one worker process per concurrent trial,
    # the whole population. Before StudySearch kept the search open to the end, resumed trials
    # started new ones (12 processes reported steps for a population of 8).
    trials = store.get_trials("toy_pb2", measurements=True)
    workers = {m.metrics["worker_pid"] for t in trials for m in t.measurements}
    assert len(workers) <= len(trials) == 4, len(workers)



@pytest.mark.parametrize("variant", ["pbt", "pb2"])
def test_a_population_whose_objective_never_reports_the_metric_fails_each_trial_naming_it(
        ray_local, tmp_path: Path, variant: str) -> None:
    """Ray's PBT raises inside Tune's loop on a result without its metric (the run ended in
    a traceback); here each trial fails as any searcher's does, naming the metric."""
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    text = with_searcher((SPACES / "toy_pbt.yaml").read_text(), f"unreported_{variant}", "pbt",
                         f"{{variant: {variant}, perturbation_interval: 1, synch: true}}")
    text = text.replace("metric: score", "metric: scor").replace(
        "budget: {trials: 8, max_concurrent: 8, max_steps: 24}",
        "budget: {trials: 2, max_concurrent: 2, max_steps: 2}")
    assert "metric: scor\n" in text and "trials: 2," in text
    run_text(text, store, tmp_path / "unreported.yaml")
    assert store.get_study(f"unreported_{variant}").state == "failed"
    trials = store.get_trials(f"unreported_{variant}")
    assert [t.state for t in trials] == [TrialState.FAILED] * 2
    for t in trials:
        assert "without reporting the metric 'scor'" in (t.error or ""), t.error
        assert "score" in (t.error or "")  # what it did report

# --- Architecture search: nas ---------------------------------------------------------------

def one_mutation_apart(parent: dict[str, Any], child: dict[str, Any], genes: set[str]) -> bool:
    """Whether exactly one gene both configs carry differs (a mutation of one choice; genes
    that appear or vanish with it do not count)."""
    shared = genes & set(parent) & set(child)
    return sum(parent[name] != child[name] for name in shared) == 1


def test_nas_children_are_one_mutation_from_a_trial_finished_before_them(ray_local,
                                                                        tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    path = SPACES / "digits_nas.yaml"
    run_text(path.read_text(), store, path)
    spec = parse_spec(path.read_text())
    nas = store.get_trials("digits_nas")
    assert all(t.state == TrialState.COMPLETED for t in nas)
    for t in nas:
        c = t.config
        assert sorted(k for k in c if k.startswith("units_")) == [
            f"units_{i}" for i in range(c["num_layers"])]
        channels = sorted(k for k in c if k.startswith("channels_"))
        assert channels == ([f"channels_{i}" for i in range(c["conv_layers"])]
                            if c["model"] == "cnn" else [])
    # After the quasi-random initial population, aging evolution proposes each trial by
    # mutating one choice of a living member, which was observed when it finished: before the
    # child was proposed and started, whichever trials ran alongside.
    population = create_searcher(spec).population  # type: ignore[attr-defined]
    genes = {p.name for p in spec.nuisance}
    children = [t for t in nas if t.number >= population]
    assert children
    for child in children:
        parents = [p for p in nas if p.finished_at is not None and child.started_at is not None
                   and p.finished_at <= child.started_at]
        assert any(one_mutation_apart(dict(p.config), dict(child.config), genes)
                   for p in parents), child.number
