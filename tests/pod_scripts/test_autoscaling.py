"""The autoscaler's decisions (the pods' autoscaling.py): what it observed in, the size out. Examples
first, then the properties every decision keeps, over every situation hypothesis generates."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.pod_modules import autoscaling

BOUNDS = autoscaling.Bounds(smallest=1, largest=4, scale_down_after=30.0, cooldown=10.0)
NOW = 1000.0


def observed(size: int = 1, up: Any = None, drained: Any = (), busy: Any = (), waiting: Any = ()) -> Any:
    """A look at an instance whose ranks below `size` are all up unless said otherwise."""
    return autoscaling.Observed(size, frozenset(range(size) if up is None else up), frozenset(drained),
                                frozenset(busy), tuple(waiting))  # fmt: skip


def decide(seen: Any, idle: dict[int, float] | None = None, last_change: float | None = None, **bounds: Any) -> Any:
    return autoscaling.decide(seen, idle or {}, BOUNDS._replace(**bounds), NOW, last_change)


def test_four_one_node_jobs_waiting_on_a_busy_rank_grow_the_cluster_to_four() -> None:
    decision = decide(observed(size=1, busy={0}, waiting=[1, 1, 1, 1]))
    assert decision == autoscaling.Decision(4, "4 queued jobs need 4 nodes, 0 free")


def test_a_grow_stops_at_max_size() -> None:
    assert decide(observed(size=1, busy={0}, waiting=[1, 1, 1, 1]), largest=3).size == 3


def test_a_grow_counts_the_free_ranks_and_those_still_coming_up() -> None:
    coming = observed(size=3, up={0}, busy={0}, waiting=[1, 1, 1])  # ranks 1-2 have pods, brokers not up yet
    assert decide(coming).size == 4


def test_a_drained_rank_is_not_free() -> None:
    assert decide(observed(size=2, drained={1}, busy={0}, waiting=[1])).size == 3


def test_waiting_jobs_that_fit_the_free_ranks_change_nothing() -> None:
    assert decide(observed(size=3, busy={0}, waiting=[1, 1])) is None


def test_ranks_idle_for_scale_down_after_go_highest_first() -> None:
    idle = {1: NOW - 40, 2: NOW - 40, 3: NOW - 40}
    assert decide(observed(size=4, busy={0}), idle) == autoscaling.Decision(
        1, "no job waits, and ranks 1-3 have been idle for 30s"
    )


def test_a_busy_rank_keeps_every_rank_below_it() -> None:
    idle = {1: NOW - 40, 3: NOW - 40}
    assert decide(observed(size=4, busy={0, 2}), idle).size == 3


def test_a_rank_idle_for_less_than_scale_down_after_stays() -> None:
    assert decide(observed(size=2, busy={0}), {1: NOW - 29}) is None


def test_a_shrink_stops_at_min_size() -> None:
    idle = {0: NOW - 99, 1: NOW - 99, 2: NOW - 99}
    assert decide(observed(size=3), idle, smallest=2).size == 2


def test_with_a_job_waiting_nothing_shrinks() -> None:
    idle = {1: NOW - 99, 2: NOW - 99, 3: NOW - 99}
    assert decide(observed(size=4, busy={0}, waiting=[4])) is None
    assert decide(observed(size=4, busy={0}, waiting=[4]), idle) is None


def test_nothing_shrinks_within_the_cooldown_of_the_last_change() -> None:
    idle = observed(size=2, busy={0})
    assert decide(idle, {1: NOW - 99}, last_change=NOW - 9) is None
    assert decide(idle, {1: NOW - 99}, last_change=NOW - 10).size == 1


def test_a_grow_may_follow_the_last_change_at_once() -> None:
    assert decide(observed(size=2, busy={0, 1}, waiting=[1]), last_change=NOW).size == 3


def test_one_waiting_job_is_said_in_the_singular() -> None:
    assert decide(observed(size=1, busy={0}, waiting=[1])).reason == "1 queued job needs 1 node, 0 free"


def test_idle_time_starts_over_when_a_rank_gets_work_or_goes_down() -> None:
    earlier = {0: 1.0, 1: 2.0, 2: 3.0}
    seen = observed(size=4, up={0, 1, 3}, busy={1})
    assert autoscaling.idle_since(earlier, seen, NOW) == {0: 1.0, 3: NOW}


# -- properties -------------------------------------------------------------------------------------


@st.composite
def situations(draw: st.DrawFn) -> tuple[Any, dict[int, float], Any, float | None]:
    largest = draw(st.integers(1, 12))
    smallest = draw(st.integers(1, largest))
    size = draw(st.integers(1, largest))
    ranks = st.sets(st.integers(0, size - 1))
    seen = observed(size, draw(ranks), draw(ranks), draw(ranks), draw(st.lists(st.integers(1, largest), max_size=6)))
    idle = {rank: NOW - draw(st.floats(0, 100)) for rank in draw(ranks)}
    bounds = autoscaling.Bounds(smallest, largest, draw(st.floats(1, 60)), draw(st.floats(1, 60)))
    last_change = draw(st.one_of(st.none(), st.floats(NOW - 100, NOW)))
    return seen, idle, bounds, last_change


@given(situations())
def test_a_decision_changes_the_size_and_stays_within_the_bounds(situation: Any) -> None:
    seen, idle, bounds, last_change = situation
    decision = autoscaling.decide(seen, idle, bounds, NOW, last_change)
    if decision is not None:
        assert decision.size != seen.size
        assert min(bounds.smallest, seen.size) <= decision.size <= bounds.largest


@given(situations())
def test_a_shrink_takes_only_ranks_idle_for_scale_down_after_and_only_with_no_job_waiting(situation: Any) -> None:
    seen, idle, bounds, last_change = situation
    decision = autoscaling.decide(seen, idle, bounds, NOW, last_change)
    if decision is not None and decision.size < seen.size:
        assert not seen.waiting
        assert decision.size >= bounds.smallest
        for rank in range(decision.size, seen.size):
            assert rank in idle and NOW - idle[rank] >= bounds.scale_down_after


@given(situations())
def test_a_grow_answers_waiting_jobs_by_at_most_their_shortfall(situation: Any) -> None:
    seen, idle, bounds, last_change = situation
    decision = autoscaling.decide(seen, idle, bounds, NOW, last_change)
    if decision is not None and decision.size > seen.size:
        shortfall = sum(seen.waiting) - autoscaling.free_nodes(seen)
        assert 0 < decision.size - seen.size <= shortfall
        assert decision.size <= bounds.largest


@given(situations())
def test_within_the_cooldown_nothing_shrinks(situation: Any) -> None:
    seen, idle, bounds, last_change = situation
    decision = autoscaling.decide(seen, idle, bounds, NOW, last_change)
    if last_change is not None and NOW - last_change < bounds.cooldown and decision is not None:
        assert decision.size > seen.size


@given(situations())
def test_a_busy_rank_never_goes(situation: Any) -> None:
    seen, idle, bounds, last_change = situation
    idle = autoscaling.idle_since(idle, seen, NOW)  # as the autoscaler tracks it: busy ranks are never idle
    decision = autoscaling.decide(seen, idle, bounds, NOW, last_change)
    if decision is not None:
        assert not {rank for rank in seen.busy if rank >= decision.size}
