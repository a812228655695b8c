"""The ops tool on a Job its scheduling guard stopped: the Job failed with DeadlineExceeded, a deadline
the user never set (flux_minicluster.cluster.scheduling), so status and wait say the guard's why."""

from __future__ import annotations

from typing import Any

from flux_minicluster.builders.names import STOPPED
from flux_minicluster.ops import cli
from tests.kube_api import Cluster, unschedulable
from tests.kube_api.samples import broker_pod, job

WHY = "its pods could not be scheduled for 180s (minicluster:scheduleTimeout)"


def stopped(api: Cluster) -> None:
    failed = job("Failed", "DeadlineExceeded")
    failed["metadata"]["annotations"][STOPPED] = WHY
    api.add_job(failed)
    api.add_pod(broker_pod(0, unschedulable("0/3 nodes are available: 3 Insufficient cpu."), node=None))


def test_status_says_the_guard_stopped_the_job_and_why(kube_api: Cluster, capsys: Any) -> None:
    stopped(kube_api)
    assert cli.main(["status", "--stack", "dev"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert f"state Failed (stopped by its scheduling guard: {WHY})" in said
    assert "DeadlineExceeded" not in said


def test_wait_ends_with_the_guards_why(kube_api: Cluster, capsys: Any) -> None:
    stopped(kube_api)
    assert cli.main(["wait", "--stack", "dev", "--timeout", "5"]) == 1
    assert f"the job failed: Failed (stopped by its scheduling guard: {WHY})" in capsys.readouterr().out
