"""A one-shot command that fails once, with a backoffLimit that lets the Job run rank 0 again, on real
Flux on the real node: the workers rejoin the next run, and the command's second run completes the Job.
Before, every worker completed at the instance's end, a Job never runs a completed index again, and the
next rank 0 waited for them until jobTimeout. The command notes its first run in a hostPath folder of
the test's own, which both runs see."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from flux_minicluster.builders.names import BROKER_CONTAINER, INDEX_LABEL
from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode

pytestmark = pytest.mark.realflux

FAILS_ONCE = "sh -c 'if [ -e /marks/tried ]; then echo second run; else touch /marks/tried; exit 3; fi'"


def retried(make: Callable[..., StackOnRealNode], tmp_path: Path, command: str) -> StackOnRealNode:
    """The dev stack of two brokers whose command may run twice (backoffLimit 1), marks in `/marks`."""
    marks = tmp_path / "marks"
    marks.mkdir(mode=0o777)
    settings = {"size": 2, "tasks": 1, "backoffLimit": 1, "jobTimeout": 120, "command": command,
                "volumes": {"marks": {"hostPath": str(marks), "path": "/marks"}}}  # fmt: skip
    return make("dev", **{**example("dev"), **settings})


def test_a_command_that_failed_once_runs_again_with_every_worker_and_completes(
    stack_on_real_node: Callable[..., StackOnRealNode], tmp_path: Path
) -> None:
    cluster = retried(stack_on_real_node, tmp_path, FAILS_ONCE)
    cluster.stack.up()
    assert cluster.condition("Complete") == "True"
    rank0 = {pod.status.phase: pod.metadata.name for pod in cluster.pods() if pod.metadata.labels[INDEX_LABEL] == "0"}
    core = client.CoreV1Api(cluster.admin)
    first = core.read_namespaced_pod_log(rank0["Failed"], cluster.namespace, container=BROKER_CONTAINER)
    assert "the command failed (status 3), and the Job runs rank 0 again (backoffLimit 1)" in first
    second = core.read_namespaced_pod_log(rank0["Succeeded"], cluster.namespace, container=BROKER_CONTAINER)
    assert "second run" in second


def test_a_command_that_fails_every_run_fails_the_job_at_its_limit(
    stack_on_real_node: Callable[..., StackOnRealNode], tmp_path: Path
) -> None:
    """Its workers, marked to rejoin a run that never comes, are stopped with the failed Job; `pulumi up`
    fails with the Job's reason, long before jobTimeout."""
    cluster = retried(stack_on_real_node, tmp_path, "sh -c 'exit 3'")
    failed = cluster.stack.up(check=False)
    assert failed.returncode != 0 and "BackoffLimitExceeded" in failed.stdout
    assert cluster.condition("Failed") == "True"
    assert len([pod for pod in cluster.pods() if pod.metadata.labels[INDEX_LABEL] == "0"]) == 2  # two runs
