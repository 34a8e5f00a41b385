"""Early-stopping rules replayed over curves: the results a study running trials ``concurrency``
at a time would have reported, judged by the rules the live scheduler runs
(:mod:`searchsvc.searchers.stopping`). Pure, and light to import: a second process replays
part of a large study's settings (:func:`replay_rules`, ``python -m`` this module).
:mod:`searchsvc.analysis.replay` judges what the stops cost and keep."""

from __future__ import annotations

import heapq
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from searchsvc.core.curve import Curve
from searchsvc.core.stopping import ArmKey, StoppingRule
from searchsvc.searchers.stopping import ByArm, Result, decider

Rule = StoppingRule
# Results (points x settings) above which a second process replays half of the settings: it
# costs about 0.4 s to start, the replay of 10,000 curves of 20 steps about 6 s on one core.
PARALLEL_RESULTS = 2_000_000


@dataclass(frozen=True)
class ReplayCurve:
    """A trial's full curve and what each of its steps cost."""

    number: int
    points: Curve  # (step, value), finite values only
    step_hours: Mapping[int, float] = field(default_factory=dict)  # step -> working hours
    arm: ArmKey = ()  # its scientific arm (arm_key)


def interleave(curves: Sequence[ReplayCurve], concurrency: int,
               stopped: Mapping[int, int] | None = None,
               relevant: Callable[[ReplayCurve], Sequence[int]] | None = None
               ) -> Iterator[Result]:
    """The results in the order a study running ``concurrency`` trials at once would report
    them: ``curves`` start in their order, each step takes one unit of time, and a trial that
    ends (its curve, or ``stopped[number]``: the step it stops after) frees its slot for the
    next one. Results reported at the same time come in the order their trials started.
    ``relevant``: of each curve, only the indices it gives (its last one among them) are
    reported, at the times they would have been: the order of those is unchanged."""
    stopped = stopped if stopped is not None else {}
    queue = list(reversed(curves))
    # (time, start order, position in its indices, its indices, curve)
    running: list[tuple[int, int, int, Sequence[int], ReplayCurve]] = []
    started = 0

    def start(now: int) -> None:
        nonlocal started
        while queue and len(running) < max(1, concurrency):
            curve = queue.pop()
            indices = range(len(curve.points)) if relevant is None else relevant(curve)
            heapq.heappush(running, (now + 1 + indices[0], started, 0, indices, curve))
            started += 1

    start(0)
    while running:
        now, order, position, indices, curve = heapq.heappop(running)
        index = indices[position]
        step, value = curve.points[index]
        yield Result(curve.number, step, value, curve.arm)
        if position + 1 < len(indices) and stopped.get(curve.number) != step:
            heapq.heappush(running, (now + indices[position + 1] - index, order, position + 1,
                                     indices, curve))
        else:
            start(now)


def one_grid(curves: Sequence[ReplayCurve]) -> bool:
    """Whether every curve's steps are a prefix of the longest curve's."""
    steps = [step for step, _ in max((c.points for c in curves), key=len, default=())]
    return all([step for step, _ in c.points] == steps[:len(c.points)] for c in curves)


def replay_rule(rule: Rule, curves: Sequence[ReplayCurve], max_steps: int, mode: str,
                concurrency: int = 1, seed: int = 0, *, grid: bool | None = None
                ) -> dict[int, int]:
    """Trial number -> the step after which ``rule`` stops it, over ``curves`` run with
    ``concurrency`` trials at once (stopped trials free their slot earlier); ``seed``: the
    study's, which draws Hyperband brackets. Only the results that can matter to the rule
    are judged (``Decider.relevant``): a rung rule looks at a few steps of each curve. Curves
    on one grid (``grid``; None: :func:`one_grid` finds out) are judged trial by trial
    (:func:`_judge_in_start_order`), others as :func:`interleave` orders them."""
    decide = decider(rule, max_steps, mode, seed)
    stopped: dict[int, int] = {}
    if one_grid(curves) if grid is None else grid:
        _judge_in_start_order(decide, curves, stopped)
        return stopped
    results = interleave(curves, concurrency, stopped,
                         lambda c: decide.relevant(c.number, c.arm, c.points))
    for result in results:
        if decide.judge(result) is not None:
            stopped[result.number] = result.step
    return stopped


def _judge_in_start_order(decide: ByArm, curves: Sequence[ReplayCurve],
                          stopped: dict[int, int]) -> None:
    """Judge the results of :func:`interleave` trial after trial, in the order the trials
    start (each up to its stop), recording stops in ``stopped``. Where every curve's steps are
    a prefix of one sequence (:func:`one_grid`), each trial reports each step after every
    trial that started before it, so a rule that compares trials at the same step (the rungs,
    the per-step statistics) decides the same on this order, at any concurrency."""
    for curve in curves:
        number, arm, points = curve.number, curve.arm, curve.points
        judge = decide.of(arm).judge
        for index in decide.relevant(number, arm, points):
            step, value = points[index]
            if judge(Result(number, step, value, arm)) is not None:
                stopped[number] = step
                break


def replay_rules(rules: Sequence[Rule], curves: Sequence[ReplayCurve], max_steps: int,
                 mode: str, concurrency: int = 1, seed: int = 0) -> list[dict[int, int]]:
    """:func:`replay_rule` of each of ``rules``, in order. A large replay on a machine with
    more than one core gives every other setting to a second Python process (started as
    ``python -m``, which, unlike multiprocessing, never re-runs a caller's ``__main__``); if
    that process fails, this one replays its settings too."""
    grid = one_grid(curves)
    work = sum(len(c.points) for c in curves) * len(rules)
    if work < PARALLEL_RESULTS or (os.cpu_count() or 1) < 2 or len(rules) < 2:
        return [replay_rule(r, curves, max_steps, mode, concurrency, seed, grid=grid)
                for r in rules]
    theirs = list(rules[1::2])
    answer: list[bytes | None] = [None]
    worker = threading.Thread(target=_in_second_process, daemon=True, args=(
        pickle.dumps((theirs, list(curves), max_steps, mode, concurrency, seed, grid)),
        answer))
    worker.start()
    mine = [replay_rule(r, curves, max_steps, mode, concurrency, seed, grid=grid)
            for r in rules[0::2]]
    worker.join()
    try:
        others: list[dict[int, int]] = pickle.loads(answer[0]) if answer[0] else []
    except (pickle.UnpicklingError, EOFError):
        others = []
    if len(others) != len(theirs):
        others = [replay_rule(r, curves, max_steps, mode, concurrency, seed, grid=grid)
                  for r in theirs]
    merged: list[dict[int, int]] = [{} for _ in rules]
    merged[0::2], merged[1::2] = mine, others
    return merged


def _in_second_process(payload: bytes, answer: list[bytes | None]) -> None:
    try:
        done = subprocess.run([sys.executable, "-m", __name__], input=payload,
                              capture_output=True, timeout=3600, check=False)
        answer[0] = done.stdout if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        answer[0] = None


def _serve() -> None:
    """The second process: rules and curves in on stdin, their stops out on stdout."""
    rules, curves, max_steps, mode, concurrency, seed, grid = pickle.loads(
        sys.stdin.buffer.read())
    stops = [replay_rule(r, curves, max_steps, mode, concurrency, seed, grid=grid)
             for r in rules]
    sys.stdout.buffer.write(pickle.dumps(stops))


if __name__ == "__main__":
    _serve()
