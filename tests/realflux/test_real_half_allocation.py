"""A rank 0 killed between the two commits of an allocation, on real Flux: the scheduler's R of a job is in
the last checkpoint, the job manager's `alloc` event is not. Found by the soak: Flux's job manager
restarted from that state takes the scheduler's next answer for the job as a second allocation and stops
scheduling for good. The replacement's rc1 step (pod_scripts/restart_rc1.py) removes that R first.

The test makes the state as the crash leaves it: the queue stopped, so that the job waits; its R written
where the scheduler writes it; a checkpoint; then rank 0 SIGKILLed. Flux does not keep a queue stopped
across a crash, so the replacement schedules again."""

from __future__ import annotations

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
    pods = cluster.start_all()
    wait_until(lambda: all(pod.ready() for pod in pods), "every broker to be ready", 30)
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
