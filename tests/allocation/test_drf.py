"""The allocator's rule on its own: dominant-resource fairness between users, then between a
user's studies, with weights, priorities, quotas and the usage tie-break that rotates whole
slots; a simulated cluster where trials end and slots are given again shows the rotation adds
up to fair shares."""

from __future__ import annotations

import pytest

from searchsvc.allocation import Claim, Policy, accrue, allocate, dominant_share, jain_index
from searchsvc.allocation.drf import preempted

CPU1 = {"CPU": 1.0}


def claim(study: str, user: str, wants: int, per_trial: dict[str, float] | None = None,
          **kw: float) -> Claim:
    return Claim(study, user, per_trial or CPU1, wants, **kw)  # type: ignore[arg-type]


def test_two_users_split_a_cluster_evenly_whatever_came_first() -> None:
    assert allocate({"CPU": 2}, [claim("big", "alice", 2, order=0),
                                 claim("small", "bob", 2, order=1)]) == {"big": 1, "small": 1}


def test_what_one_user_cannot_use_goes_to_the_others() -> None:
    assert allocate({"CPU": 4}, [claim("big", "alice", 4), claim("small", "bob", 1)]) == {
        "big": 3, "small": 1}
    assert allocate({"CPU": 4}, [claim("big", "alice", 4), claim("done", "bob", 0)]) == {
        "big": 4, "done": 0}


def test_dominant_resource_fairness_equalises_each_users_largest_share() -> None:
    # The DRF paper's example: 9 CPUs and 18 GB; alice's tasks <1 CPU, 4 GB> (memory-heavy),
    # bob's <3 CPU, 1 GB> (CPU-heavy). DRF gives alice 3 tasks and bob 2: 2/3 of a resource
    # each.
    capacity = {"CPU": 9, "memory": 18}
    got = allocate(capacity, [claim("a", "alice", 10, {"CPU": 1, "memory": 4}),
                              claim("b", "bob", 10, {"CPU": 3, "memory": 1})])
    assert got == {"a": 3, "b": 2}
    assert dominant_share({"CPU": 3, "memory": 12}, capacity) == pytest.approx(2 / 3)
    assert dominant_share({"CPU": 6, "memory": 2}, capacity) == pytest.approx(2 / 3)


def test_fractional_gpus_and_a_user_weight() -> None:
    capacity = {"CPU": 16, "GPU": 4}
    half = {"CPU": 1, "GPU": 0.5}
    assert allocate(capacity, [claim("a", "alice", 8, half)]) == {"a": 8}
    weighted = Policy(weights={"alice": 2.0})
    assert allocate(capacity, [claim("a", "alice", 8, half), claim("b", "bob", 8, half)],
                    weighted) == {"a": 5, "b": 3}  # 2:1 as near as whole slots go


def test_a_users_studies_share_that_users_part() -> None:
    got = allocate({"CPU": 4}, [claim("a1", "alice", 4, order=0), claim("a2", "alice", 4, order=1),
                                claim("b", "bob", 4, order=2)])
    assert got == {"a1": 1, "a2": 1, "b": 2}


def test_a_higher_priority_takes_what_it_can_use_first() -> None:
    got = allocate({"CPU": 4}, [claim("low", "alice", 4), claim("high", "bob", 3, priority=5)])
    assert got == {"low": 1, "high": 3}


def test_a_lower_priority_gives_back_at_checkpoints_only_what_a_higher_one_waits_for() -> None:
    low, high = claim("low", "alice", 4), claim("high", "bob", 3, priority=5)
    slots = allocate({"CPU": 4}, [low, high])
    # bob's study just arrived: alice's 4 running trials hold what it was given
    assert preempted([low, high], slots, {"low": 4, "high": 0}) == {"low"}
    # once bob runs his 3, alice's 4th trial is gone and nothing is waiting
    assert preempted([low, high], slots, {"low": 1, "high": 3}) == set()
    # equal priorities: a new user's share comes as trials end, never by pausing
    alice, bob = claim("a", "alice", 4), claim("b", "bob", 4)
    even = allocate({"CPU": 4}, [alice, bob])
    assert even == {"a": 2, "b": 2}
    assert preempted([alice, bob], even, {"a": 4, "b": 0}) == set()
    # a middle priority above its allowance gives back to the top one, not to the bottom one
    top, middle = claim("top", "carol", 2, priority=9), claim("mid", "dave", 4, priority=3)
    bottom = claim("bottom", "erin", 4)
    slots = {"top": 2, "mid": 2, "bottom": 0}
    assert preempted([top, middle, bottom], slots, {"top": 0, "mid": 4, "bottom": 0}) == {"mid"}
    assert preempted([top, middle, bottom], slots, {"top": 2, "mid": 2, "bottom": 0}) == set()


def test_a_quota_caps_a_user_even_on_an_idle_cluster() -> None:
    policy = Policy(quotas={"alice": {"GPU": 1}})
    gpu = {"CPU": 1, "GPU": 1}
    assert allocate({"CPU": 8, "GPU": 4}, [claim("a", "alice", 4, gpu)], policy) == {"a": 1}
    # The quota names GPUs only: CPUs stay unlimited.
    assert allocate({"CPU": 8, "GPU": 4}, [claim("c", "alice", 8)], policy) == {"c": 8}


def test_a_trial_that_does_not_fit_gets_no_slot() -> None:
    assert allocate({"CPU": 8}, [claim("g", "alice", 2, {"CPU": 1, "GPU": 1})]) == {"g": 0}
    assert allocate({"CPU": 3}, [claim("w", "alice", 2, {"CPU": 2})]) == {"w": 1}


def test_equal_shares_go_to_whoever_used_least_so_far() -> None:
    claims = [claim(u, u, 2) for u in ("alice", "bob", "carol")]
    got = allocate({"CPU": 2}, claims, Policy(used={"alice": 30.0, "bob": 5.0, "carol": 10.0}))
    assert got == {"alice": 0, "bob": 1, "carol": 1}


def test_whole_slots_rotated_as_trials_end_add_up_to_fair_shares() -> None:
    # Three users with equal, endless demand on 2 CPUs; every trial lasts 3 time units and
    # the allowances are recomputed each time one ends. A user below their allowance starts a
    # trial at once; one above it starts none until it is below.
    capacity = {"CPU": 2.0}
    users = ("alice", "bob", "carol")
    claims = [claim(u, u, 2, order=i) for i, u in enumerate(users)]
    policy = Policy()
    running: dict[str, list[float]] = {u: [] for u in users}  # end times
    slot_time = {u: 0.0 for u in users}
    now, windows = 0.0, []
    while now < 120:
        allowance = allocate(capacity, claims, policy)
        for user in users:
            while len(running[user]) < allowance[user] and sum(map(len, running.values())) < 2:
                running[user].append(now + 3.0)
        nxt = min(t for ends in running.values() for t in ends)
        held = {u: {"CPU": float(len(running[u]))} for u in users}
        policy = accrue(policy, held, capacity, nxt - now)
        for user in users:
            slot_time[user] += len(running[user]) * (nxt - now)
            running[user] = [t for t in running[user] if t > nxt]
        now = nxt
        windows.append(dict(slot_time))
    assert jain_index(list(slot_time.values())) >= 0.99
    # and over every 10 recomputations in a row, nearly so
    for start, end in zip(windows[::10], windows[10::10], strict=False):
        assert jain_index([end[u] - start[u] for u in users]) >= 0.9


def test_jain_index_bounds() -> None:
    assert jain_index([1, 1, 1]) == 1
    assert jain_index([3, 0, 0]) == pytest.approx(1 / 3)
    assert jain_index([]) == 1


def test_bad_claims_echo_the_value() -> None:
    with pytest.raises(ValueError, match="-1"):
        claim("a", "alice", -1)
    with pytest.raises(ValueError, match="one claim per study"):
        allocate({"CPU": 1}, [claim("a", "alice", 1), claim("a", "bob", 1)])
    with pytest.raises(ValueError, match=r"0\.0 for 'bob'"):
        allocate({"CPU": 1}, [claim("a", "bob", 1)], Policy(weights={"bob": 0.0}))
