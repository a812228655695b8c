"""securityProfile restricted in a namespace that enforces Pod Security's restricted level, under a real
`pulumi up` and judged by the real API server's PodSecurity admission: the plain stack is refused by
the program's dry run before anything is created; the restricted one is admitted, and its Job
completes (on real Flux, marked realflux: its tasks ran as uid 1000)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.harness import example
from tests.realengine.pulumi_stack import StackOnNode

ENFORCED = {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}
pytestmark = pytest.mark.namespace_labels(ENFORCED)


def test_the_plain_stack_is_refused_before_anything_is_created(stack_on_node: Callable[..., StackOnNode]) -> None:
    cluster = stack_on_node("dev", **example("dev"))
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    said = refused.stdout
    assert f"an admission policy of namespace {cluster.namespace!r} refuses the broker pods" in said
    assert 'violates PodSecurity "restricted:latest"' in said
    assert "minicluster:securityProfile restricted makes every pod" in said
    assert cluster.left() == {}
    assert set(cluster.stack.resource_types()) <= {"pulumi:pulumi:Stack"}


@pytest.fixture
def restricted(stack_on_node: Callable[..., StackOnNode]) -> StackOnNode:
    cluster = stack_on_node(
        "dev",
        **{**example("dev"), "size": 2, "tasks": 2, "command": "id -u"},
        securityProfile="restricted",
        keygen="local",
    )
    cluster.stack.up()
    return cluster


def test_the_restricted_stack_is_admitted_and_its_job_completes(restricted: StackOnNode) -> None:
    assert restricted.condition("Complete") == "True"
    assert sorted(pod.status.phase for pod in restricted.pods()) == ["Succeeded"] * 2


@pytest.mark.realflux
def test_the_restricted_stacks_tasks_run_as_uid_1000(restricted: StackOnNode) -> None:
    cluster = restricted
    assert [line for line in cluster.rank0.log.splitlines() if line == "1000"] == ["1000", "1000"]
