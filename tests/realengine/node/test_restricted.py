"""securityProfile restricted in a namespace that enforces Pod Security's restricted level, under a real
`pulumi up` and judged by the real API server's PodSecurity admission, with the pods in real
containers: the plain stack is refused by the program's dry run before anything is created; the
restricted one is admitted (the keygen pod too), its one-shot Job completes, and in a persistent one
runc starts the broker as uid 1000 under the runtime's seccomp profile with every capability dropped,
and that user writes the volumes the entrypoint and Flux write (fsGroup), /dev/shm included."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode

ENFORCED = {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}
pytestmark = pytest.mark.namespace_labels(ENFORCED)


def test_the_plain_stack_is_refused_before_anything_is_created(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    cluster = stack_on_real_node("dev", **example("dev"))
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    said = refused.stdout
    assert f"an admission policy of namespace {cluster.namespace!r} refuses the broker pods" in said
    assert 'violates PodSecurity "restricted:latest"' in said
    assert "minicluster:securityProfile restricted makes every pod" in said
    assert cluster.left() == {}
    assert set(cluster.stack.resource_types()) <= {"pulumi:pulumi:Stack"}


def test_with_admission_off_nothing_is_asked_first_and_the_keygen_pods_create_meets_the_refusal(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    """`admission: off` sends nothing to the cluster before the creates, the dry run included: the policy
    refuses the first pod created, the keygen pod, in the API server's words, and no Job is created."""
    cluster = stack_on_real_node("dev", **example("dev"), admission="off")
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    said = refused.stdout
    assert "(a dry run)" not in said and "refuses the broker pods" not in said
    assert "creating the keygen pod" in said
    assert 'violates PodSecurity "restricted:latest"' in said
    assert cluster.left().get("jobs", []) == []
    cluster.stack.destroy()
    assert cluster.left() == {}


def test_with_admission_off_and_a_local_certificate_the_job_is_created_and_stopped_after_schedule_timeout(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    """Without the keygen pod the Job is the first to make pods: the Job controller cannot create them,
    and `pulumi up` ends after scheduleTimeout with the Job's FailedCreate message."""
    cluster = stack_on_real_node("dev", **example("dev"), admission="off", keygen="local", scheduleTimeout=10)
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    said = refused.stdout
    assert "could not be created for 10s (minicluster:scheduleTimeout): FailedCreate" in said
    assert 'violates PodSecurity "restricted:latest"' in said
    assert cluster.condition("Failed") == "True"  # stopped, not left to wait for room
    cluster.stack.destroy()
    assert cluster.left() == {}


def test_the_restricted_one_shot_stack_is_admitted_and_its_job_completes(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    cluster = stack_on_real_node("dev", **{**example("dev"), "size": 2, "tasks": 2}, securityProfile="restricted")
    cluster.stack.up()
    assert cluster.condition("Complete") == "True"
    assert sorted(pod.status.phase for pod in cluster.pods()) == ["Succeeded"] * 2


@pytest.fixture(scope="module")
def restricted(module_stack_on_real_node: Callable[..., StackOnRealNode]) -> StackOnRealNode:
    """One for the module's checks of a running instance, none of which changes it."""
    cluster = module_stack_on_real_node(
        "interactive", **{**example("interactive"), "size": 2}, securityProfile="restricted"
    )
    cluster.stack.up()
    return cluster


def test_every_broker_is_ready_in_the_enforcing_namespace(restricted: StackOnRealNode) -> None:
    assert restricted.running(2)


def test_the_broker_runs_as_uid_1000_without_capabilities(restricted: StackOnRealNode) -> None:
    assert restricted.exec(0, "id", "-u").strip() == "1000"
    status = dict(
        line.split(":\t", 1) for line in restricted.exec(0, "cat", "/proc/self/status").splitlines() if ":\t" in line
    )
    assert status["CapEff"].strip() == "0000000000000000"
    assert status["NoNewPrivs"].strip() == "1"
    assert status["Seccomp"].strip() == "2"  # a filter: the runtime's default profile


@pytest.mark.realflux
def test_flux_runs_the_users_tasks_as_uid_1000(restricted: StackOnRealNode) -> None:
    said = restricted.flux(0, "run", "-N2", "id", "-u")
    assert said.split() == ["1000", "1000"]


def test_uid_1000_writes_the_state_volume_and_dev_shm(restricted: StackOnRealNode) -> None:
    for folder in ("/var/lib/minicluster", "/dev/shm"):
        said = restricted.exec(
            1, "sh", "-c", f"echo written >{folder}/probe && cat {folder}/probe && rm {folder}/probe"
        )
        assert said.strip() == "written", folder
