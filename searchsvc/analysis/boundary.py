"""Boundary checks (Playbook: "check that the search space boundaries were wide enough"):
whether the best trials crowd an edge of a searched numeric range, judged in the parameter's
own scale, and a concrete range to search next.

A crowded edge where trials past it diverge is a *divergence edge*: the range must not be
expanded there, and the suggestion trims it to the last stable value instead.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from searchsvc.analysis.trials import arm_label
from searchsvc.core import TrialRecord, TrialState
from searchsvc.core.judging import by_value
from searchsvc.spec import RangeParameter, StudySpec

STATUS_OK = "ok"
STATUS_NEAR_LOW = "near_low"
STATUS_NEAR_HIGH = "near_high"
STATUS_DIVERGENCE_EDGE = "divergence_edge"

EDGE_ZONE = 0.15  # the outer share of a range (own scale) that counts as "at the edge"
UPPER_QUARTER = 0.75  # where the top trials must gather for an edge to count as crowded
EXPAND_SHARE = 0.5  # an expanded edge moves out by this share of the range's width...
MAX_LOG_EXPANSION = math.log(100.0)  # ...but a log range by at most two decades


@dataclass(frozen=True)
class BoundaryCheck:
    parameter: str
    scale: str
    low: float
    high: float
    status: str  # ok | near_low | near_high | divergence_edge
    suggested_low: float
    suggested_high: float
    top_positions: tuple[float, ...]  # where the top trials sit, 0 = low edge, 1 = high edge
    detail: str
    arm: str = ""  # the scientific arm whose best trials crowd the edge, if any


def check_boundaries(spec: StudySpec, trials: Sequence[TrialRecord],
                     top_fraction: float = 0.2) -> list[BoundaryCheck]:
    """One check per searched numeric range. Within each scientific arm (whose best nuisance
    values may differ) the top ``top_fraction`` of finished trials, at least 3, are examined;
    the parameter is flagged when any arm's best trials crowd an edge."""
    checks = []
    for param in spec.parameters.values():
        if isinstance(param, RangeParameter) and param.searched:
            checks.append(_check(spec, param, trials, top_fraction))
    return checks


def _check(spec: StudySpec, param: RangeParameter, trials: Sequence[TrialRecord],
           top_fraction: float) -> BoundaryCheck:
    with_param = [t for t in trials if isinstance(t.config.get(param.name), int | float)]
    arms: dict[str, list[TrialRecord]] = {}
    for t in with_param:
        arms.setdefault(arm_label(t), []).append(t)
    flagged: list[BoundaryCheck] = []
    ok_positions: list[float] = []
    for label, members in sorted(arms.items()):
        best = by_value(members, spec.mode)
        if len(best) < 3:
            continue
        top = best[:max(3, math.ceil(top_fraction * len(best)))]
        positions = [param.to_unit(t.config[param.name]) for t in top]
        diverged = [param.to_unit(t.config[param.name]) for t in members
                    if t.state == TrialState.INFEASIBLE]
        finite = [param.to_unit(t.config[param.name]) for t in best]
        check = _judge(param, positions, diverged, finite, label)
        if check.status != STATUS_OK:
            flagged.append(check)
        ok_positions += positions
    if flagged:
        # The divergence edge wins: never suggest expanding into a region that diverges.
        flagged.sort(key=lambda c: (c.status != STATUS_DIVERGENCE_EDGE, c.arm))
        return flagged[0]
    return _ok(param, ok_positions)


def _judge(param: RangeParameter, positions: list[float], diverged: list[float],
           finite: list[float], arm: str) -> BoundaryCheck:
    best = positions[0]
    where = f" in arm {arm}" if arm else ""
    for side in ("high", "low"):
        sign = 1 if side == "high" else -1
        # Mirror the low side onto the high side so one rule serves both.
        b = best if side == "high" else 1 - best
        beyond = sorted(d if side == "high" else 1 - d for d in diverged)
        stable = [u if side == "high" else 1 - u for u in finite]
        onset = _divergence_onset(beyond, stable)
        if onset is not None and 0 <= onset - b <= EDGE_ZONE:
            # The best trials sit just below where training diverges.
            edge = onset if side == "high" else 1 - onset
            low, high = ((param.low, param.from_unit(edge)) if side == "high"
                         else (param.from_unit(edge), param.high))
            return BoundaryCheck(
                param.name, param.scale, param.low, param.high, STATUS_DIVERGENCE_EDGE,
                _round(param, low), _round(param, high), tuple(positions),
                f"the best trials{where} sit just below where training diverges "
                f"({sum(d >= onset for d in beyond)} trials with {param.name} "
                f"{'above' if side == 'high' else 'below'} {_fmt(param.from_unit(edge))} "
                "went NaN/inf): this edge is a stability limit, do not expand it", arm)
        if b >= 1 - EDGE_ZONE and _crowded(positions if side == "high" else
                                           [1 - u for u in positions],
                                           stable):
            low, high = _expanded(param, positions, sign)
            return BoundaryCheck(
                param.name, param.scale, param.low, param.high,
                STATUS_NEAR_HIGH if side == "high" else STATUS_NEAR_LOW,
                low, high, tuple(positions),
                f"the best trials{where} crowd the {side} edge ({_fmt(getattr(param, side))}) "
                f"of {param.name}: the optimum may lie beyond it; search "
                f"[{_fmt(low)}, {_fmt(high)}] next", arm)
    return _ok(param, positions)


def _crowded(top: list[float], everyone: list[float]) -> bool:
    """Whether the top trials favour the upper quarter of the range: at least half of them
    there, and at least twice the share of all trials there (so that a parameter that does not
    matter, whose top trials fall where any trial does, raises no alarm)."""
    top_share = sum(u >= UPPER_QUARTER for u in top) / len(top)
    all_share = sum(u >= UPPER_QUARTER for u in everyone) / max(1, len(everyone))
    return top_share >= max(0.5, 2 * all_share)


def _divergence_onset(diverged: list[float], stable: list[float]) -> float | None:
    """The lowest position from which on trials mostly diverge (at least 2 and 3 in 4 of the
    trials there) while below it few do (at most 1 in 5): a divergence this parameter explains.
    Positions are mirrored so that "beyond" is always upwards; ``diverged`` is sorted. None
    when there is no such position."""
    stable = sorted(stable)
    for i, onset in enumerate(diverged):
        above_bad, below_bad = len(diverged) - i, i
        below_ok = bisect.bisect_left(stable, onset)
        above_ok = len(stable) - below_ok
        if (above_bad >= 2 and above_bad >= 3 * above_ok
                and below_bad <= 0.2 * (below_bad + below_ok)):
            return onset
    return None


def _ok(param: RangeParameter, positions: list[float]) -> BoundaryCheck:
    """Not at an edge. When the top trials span under half the range, suggest narrowing to
    them plus a margin (the Playbook's exploitation phase); else keep the range."""
    if positions and max(positions) - min(positions) < 0.5:
        lo_u, hi_u = max(0.0, min(positions) - EDGE_ZONE), min(1.0, max(positions) + EDGE_ZONE)
        low, high = _round(param, param.from_unit(lo_u)), _round(param, param.from_unit(hi_u))
    else:
        low, high = param.low, param.high
    return BoundaryCheck(param.name, param.scale, param.low, param.high, STATUS_OK, low, high,
                         tuple(positions), "the best trials are inside the range")


def _expanded(param: RangeParameter, positions: list[float], sign: int) -> tuple[float, float]:
    """Move the crowded edge out by half the range's width (in its own scale, at most two
    decades for log ranges) and pull the other edge in towards the top trials."""
    if param.scale == "log":
        lo, hi = math.log(param.low), math.log(param.high)
        width = min(EXPAND_SHARE * (hi - lo), MAX_LOG_EXPANSION)
    else:
        lo, hi = param.low, param.high
        width = EXPAND_SHARE * (hi - lo)
    span = hi - lo
    if sign > 0:
        new_lo = lo + max(0.0, min(positions) - EDGE_ZONE) * span
        new_hi = hi + width
    else:
        new_lo = lo - width
        new_hi = lo + min(1.0, max(positions) + EDGE_ZONE) * span
    if param.scale == "log":
        new_lo, new_hi = math.exp(new_lo), math.exp(new_hi)
    elif param.low >= 0:
        new_lo = max(new_lo, 0.0)  # a non-negative parameter (dropout, decay) stays so
    return _round(param, new_lo), _round(param, new_hi)


def _round(param: RangeParameter, value: float) -> float:
    if param.kind == "int":
        return float(round(value))
    return float(f"{value:.3g}")


def _fmt(value: float) -> str:
    return f"{value:.3g}"
