"""Waiting for the cluster: one deadline, and how long a bad condition (pods unschedulable) has held.
The keygen pod, a resize, the scheduling guard and the ops tool's `wait` all wait this way, on one
clock that a test may replace."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

Say = Callable[[str], None]


def to_stderr(line: str) -> None:
    """What a dynamic provider prints on stderr, `pulumi up` shows as it comes, as a line of the stack's."""
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Clock:
    """How a wait passes time."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    poll: float = 1.0
    """Seconds between two looks, for waits that poll."""


class Wait:
    """One wait of at most `timeout` seconds."""

    def __init__(self, timeout: float, clock: Clock | None = None) -> None:
        self.clock, self.timeout = clock or Clock(), timeout
        self.deadline = self.clock.now() + timeout
        self._since: float | None = None

    @property
    def remaining(self) -> float:
        return self.deadline - self.clock.now()

    @property
    def over(self) -> bool:
        return self.remaining <= 0

    def held_for(self, holds: bool) -> float:
        """Seconds the condition has held without a break, as of this look (0 when it does not hold)."""
        self._since = (self._since if self._since is not None else self.clock.now()) if holds else None
        return self.held

    @property
    def held(self) -> float:
        """Seconds the condition has held, as of the last look that saw it."""
        return 0.0 if self._since is None else self.clock.now() - self._since

    def held_until(self, limit: float) -> float:
        """When the condition, still holding, will have held for `limit` seconds (the deadline if it
        does not hold)."""
        return self.deadline if self._since is None else min(self.deadline, self._since + limit)

    def pause(self) -> None:
        """One poll interval, never past the deadline."""
        self.clock.sleep(max(0.0, min(self.clock.poll, self.remaining)))


class Progress:
    """What a long wait says as it goes: nothing in its first `AFTER` seconds (a quick wait says
    nothing, and leaves nothing in `pulumi up`'s diagnostics), then its state each time it changes, at
    most one line every `EVERY` seconds. The waiter looks again by `due()` even if nothing happened."""

    AFTER = 5.0
    EVERY = 10.0

    def __init__(self, say: Say, clock: Clock) -> None:
        self.say, self.clock = say, clock
        self._next = clock.now() + self.AFTER
        self._said: str | None = None

    def due(self) -> float:
        """When the next line may be said."""
        return self._next

    def tell(self, state: str) -> None:
        now = self.clock.now()
        if now < self._next:
            return
        self._next = now + self.EVERY
        if state != self._said:
            self._said = state
            self.say(state)
