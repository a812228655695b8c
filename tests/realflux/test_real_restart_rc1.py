"""Rank 0 restarted after a crash, on real Flux, from a checkpoint that holds what Flux's job manager
(0.88) mishandles; the replacement's rc1 step (pod_scripts/restart_rc1.py) mends it first. Each test makes
the state as the crash leaves it, takes a checkpoint, then SIGKILLs rank 0.

- A job whose allocation was recorded halfway: the scheduler's R is in the checkpoint, the job manager's
  `alloc` event is not. Restarted from that, the job manager takes the scheduler's next answer for the job
  as a second allocation and stops scheduling for good. The queue is stopped so that the job waits; Flux
  does not keep a queue stopped across a crash, so the replacement schedules again.
- A job that had ended but was not cleaned up (its eventlog ends at `finish`, or at `free`). Restarted
  from that, the job manager counts one job fewer than run, for good: `flux queue idle` never returns,
  and Flux's own shutdown waits on it. Both found by the soak."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.flux_checkpoints import checkpointed
from tests.kubelet.pod import wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
STATE = {"claimName": "flux-state", "checkpointPeriod": "1s"}


def test_a_job_whose_allocation_a_crash_left_half_recorded_runs_after_the_restart(
    minicluster: Callable[..., Kubelet],
) -> None:
    cluster = minicluster(command=None, stateVolume=STATE, size=2)
    cluster.start_all_ready()
    rank0 = cluster.pod(0)
    rank0.flux("queue", "stop", "--quiet")
    job = rank0.flux("submit", "-N1", "true").strip()
    key = rank0.flux("job", "id", "--to=kvs", job).strip()
    rank0.flux("kvs", "put", f"{key}.R={rank0.flux('R', 'encode', '--ranks=0', '--cores=0').strip()}")
    checkpointed(rank0.flux)
    rank0.kill()
    rank0.wait()

    replacement = cluster.start(0)
    wait_until(replacement.ready, "the replacement's broker to be up", 60)
    wait_until(lambda: replacement.flux("jobs", "-n", "-o", "{status}", job).strip() == "COMPLETED",
               "the job to run", 30)  # fmt: skip
    assert f"job {job}: its allocation was recorded only halfway when the instance stopped" in replacement.log
    assert replacement.flux("queue", "status").splitlines()[-1] == "Scheduling is started"
    assert replacement.flux("run", "-N2", "true", timeout=30) == ""  # and the jobs after it


@pytest.mark.parametrize("ended_at", ["finish", "free"])  # still holding its resources, or not
def test_a_job_a_crash_left_ended_but_not_cleaned_up_leaves_flux_counting_no_job_running(
    minicluster: Callable[..., Kubelet], ended_at: str
) -> None:
    cluster = minicluster(command=None, stateVolume=STATE, size=2)
    cluster.start_all_ready()
    rank0 = cluster.pod(0)
    job = rank0.flux("submit", "--requires=rank:1", "true").strip()
    rank0.flux("job", "wait-event", "--timeout=30", job, "clean")
    eventlog = f"{rank0.flux('job', 'id', '--to=kvs', job).strip()}.eventlog"
    events = rank0.flux("kvs", "get", eventlog).splitlines()
    ended = next(at for at, line in enumerate(events) if json.loads(line)["name"] == ended_at)
    rank0.flux("kvs", "put", eventlog + "=" + "".join(f"{line}\n" for line in events[: ended + 1]))
    checkpointed(rank0.flux)
    rank0.kill()
    rank0.wait()

    replacement = cluster.start(0)
    wait_until(replacement.ready, "the replacement's broker to be up", 60)
    assert "restart: 0 running jobs" in replacement.log  # -1 without the rc1 step
    replacement.flux("queue", "idle", "--timeout=10s")  # it never returned
    assert replacement.flux("jobs", "-n", "-o", "{status}", job).strip() == "COMPLETED"
    assert f"job {job}: it had ended, but was not cleaned up when the instance stopped" in replacement.log
    assert replacement.flux("run", "--requires=rank:1", "true", timeout=30) == ""  # its resources are free
