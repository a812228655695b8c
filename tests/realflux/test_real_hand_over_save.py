"""A hand-over saves the instance before rank 0's broker stops, on real Flux. Flux saves it itself as its
broker stops, in its rc3, and a broker that dies in its stop restarts from its last checkpoint, up to
stateVolume.checkpointPeriod old: the soak saw Flux's job manager crash as it unloaded there, and the jobs
taken during the hand-over were lost. The test holds the broker in its cleanup (a command of its own
that waits there) and kills it then, before its rc3; the checkpoint period is longer than the test."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from tests.kubelet.pod import wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
STATE = {"claimName": "flux-state", "checkpointPeriod": "10m"}


def test_a_job_taken_before_a_hand_over_outlives_a_rank0_broker_that_dies_in_its_own_stop(
    minicluster: Callable[..., Kubelet],
) -> None:
    cluster = minicluster(command=None, stateVolume=STATE, size=2)
    cluster.start_all_ready()
    rank0 = cluster.pod(0)
    rank0.flux("queue", "stop", "--quiet")  # the job waits for the replacement
    job = rank0.flux("submit", "true").strip()
    rank0.flux("admin", "cleanup-push", "sleep 300")  # runs in the broker's cleanup, after the hand-over
    broker = rank0.flux("getattr", "broker.pid").strip()
    stopping = threading.Thread(target=rank0.terminate)
    stopping.start()
    wait_until(lambda: rank0.exec("pgrep", "-fx", "sleep 300").returncode == 0, "the broker's cleanup", 30)
    assert rank0.exec("kill", "-KILL", broker).returncode == 0  # before its rc3 saves the instance
    stopping.join()

    replacement = cluster.start(0)
    wait_until(replacement.ready, "the replacement's broker to be up", 60)
    assert "Flux was not shut down properly" in replacement.log  # restarted from a checkpoint, not a clean stop
    assert replacement.flux("jobs", "-n", "-o", "{id.f58}", job).strip() == job
