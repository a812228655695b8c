"""The one way the cluster layer waits (flux_minicluster/cluster/waiting.py), on a clock the test moves."""

from __future__ import annotations

from flux_minicluster.cluster.waiting import Clock, Progress, Wait


class Manual:
    """A clock that moves only when slept on."""

    def __init__(self) -> None:
        self.t = 100.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


def waiting(timeout: float, poll: float = 1.0) -> tuple[Wait, Manual]:
    manual = Manual()
    return Wait(timeout, Clock(now=manual.now, sleep=manual.sleep, poll=poll)), manual


def test_a_condition_counts_from_the_first_look_that_saw_it_and_a_break_starts_it_again() -> None:
    wait, clock = waiting(60)
    assert wait.held_for(True) == 0
    clock.t += 5
    assert wait.held_for(True) == 5
    assert wait.held_for(False) == 0
    clock.t += 1
    assert wait.held_for(True) == 0


def test_a_pause_never_sleeps_past_the_deadline() -> None:
    wait, clock = waiting(2.5, poll=1)
    while not wait.over:
        wait.pause()
    assert clock.slept == [1, 1, 0.5]


def test_held_until_is_when_the_condition_will_have_held_long_enough_or_the_deadline() -> None:
    wait, _ = waiting(30)
    assert wait.held_until(10) == 130  # not holding: the deadline
    wait.held_for(True)
    assert wait.held_until(10) == 110
    assert wait.held_until(60) == 130


def progress() -> tuple[Progress, Manual, list[str]]:
    manual, said = Manual(), list[str]()
    return Progress(said.append, Clock(now=manual.now, sleep=manual.sleep)), manual, said


def test_a_wait_says_nothing_in_its_first_seconds() -> None:
    told, clock, said = progress()
    told.tell("the keygen pod is waiting for a node")
    clock.sleep(Progress.AFTER - 0.1)
    told.tell("the keygen pod is on node n1")
    assert said == []


def test_a_longer_wait_says_its_state_when_it_changes_and_no_more_than_once_a_period() -> None:
    told, clock, said = progress()
    clock.sleep(Progress.AFTER)
    told.tell("1 of 4 brokers are ready")
    told.tell("2 of 4 brokers are ready")  # at once: it waits for its turn
    assert (said, told.due()) == (["1 of 4 brokers are ready"], clock.t + Progress.EVERY)
    clock.sleep(Progress.EVERY)
    told.tell("2 of 4 brokers are ready")
    clock.sleep(Progress.EVERY)
    told.tell("2 of 4 brokers are ready")  # unchanged: not said again
    assert said == ["1 of 4 brokers are ready", "2 of 4 brokers are ready"]
