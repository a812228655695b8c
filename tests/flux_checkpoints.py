"""What a restarted rank 0 gets back: the newest of Flux's checkpoints of its KVS (stateVolume).

Flux writes one in each checkpoint period (stateVolume.checkpointPeriod) in which the KVS changed,
numbered by the root it saved. A test that kills or evicts rank 0 and expects the instance back as it
was waits for that checkpoint, not for a number of periods: a loaded machine may write it late."""

from __future__ import annotations

from collections.abc import Callable

from tests.kubelet.pod import wait_until

CHECKPOINT_WAIT = 30.0
"""Seconds a checkpoint of the KVS as it is now may take."""


def checkpointed(flux: Callable[..., str]) -> None:
    """Until Flux's newest checkpoint holds the KVS as it is now; `flux(*argv)` runs a Flux command on
    rank 0 and returns its output. Changes made after this are what a killed rank 0 loses."""
    now = int(flux("kvs", "getroot", "--sequence").strip())

    def newest() -> int:
        header, latest, *_ = flux("content", "checkpoint", "list").splitlines()
        assert header.split()[:2] == ["Index", "Sequence"], header
        return int(latest.split()[1])

    wait_until(lambda: newest() >= now, "a checkpoint of the instance as it is now", CHECKPOINT_WAIT)
