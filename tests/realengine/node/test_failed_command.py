"""A MiniCluster whose pods fail, under a real `pulumi up` on the real node: `pulumi up`'s error carries
the end of the failed container's log (its termination message, FallbackToLogsOnError, which
pulumi-kubernetes shows), so that the user sees why without `kubectl logs`: "hostnme: not found", not
only `Container "flux-broker" completed with exit code 3`. A failed Job is not run again by a `pulumi up`
with nothing changed; `rerun` runs it again as it is."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode


def test_a_failed_init_hook_is_told_in_pulumi_ups_error(stack_on_real_node: Callable[..., StackOnRealNode]) -> None:
    """The hook runs before Flux does: under logging.strict, each pod fails with what it printed."""
    hooks = {"init": "echo 'the scratch space is not mounted' >&2; exit 4"}
    settings = {"size": 2, "tasks": 2, "hooks": hooks, "logging": {"strict": True}}
    cluster = stack_on_real_node("dev", **{**example("dev"), **settings})
    failed = cluster.stack.up(check=False)
    assert failed.returncode != 0
    assert "[Error] " in failed.stdout  # a termination message, not only "completed with exit code 4"
    assert "the scratch space is not mounted" in failed.stdout
    assert "the init hook failed with status 4" in failed.stdout
    cluster.stack.destroy()
    assert cluster.left() == {}


@pytest.mark.realflux
def test_a_failed_command_is_told_in_pulumi_ups_error_with_its_output_and_status(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    command = "sh -c 'hostnme; exit 3'"
    cluster = stack_on_real_node("dev", **{**example("dev"), "size": 2, "tasks": 2, "command": command})
    failed = cluster.stack.up(check=False)
    assert failed.returncode != 0
    assert "hostnme: not found" in failed.stdout  # the command's own output, from rank 0's log
    assert "minicluster[rank 0]: exiting with status 3" in failed.stdout
    cluster.stack.destroy()
    assert cluster.left() == {}


def test_a_failed_job_runs_again_as_it_is_when_rerun_changes(
    stack_on_real_node: Callable[..., StackOnRealNode], admin: client.ApiClient, namespace: str
) -> None:
    """What failed it is fixed outside the stack config: here, the input the init hook reads."""
    core = client.CoreV1Api(admin)
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="input"),
                                                                     data={"ready": "no"}))  # fmt: skip
    hooks = {"init": "grep -q yes /input/ready || { echo 'the input is not ready' >&2; exit 4; }"}
    volumes = {"input": {"path": "/input", "configMap": "input"}}
    settings = {"size": 2, "tasks": 2, "hooks": hooks, "volumes": volumes, "logging": {"strict": True}}
    cluster = stack_on_real_node("dev", **{**example("dev"), **settings})
    assert "the input is not ready" in cluster.stack.up(check=False).stdout
    failed = cluster.job().metadata.uid
    core.patch_namespaced_config_map("input", namespace, {"data": {"ready": "yes"}})
    assert cluster.stack.up(check=False).returncode != 0  # nothing changed: the same failed Job
    assert cluster.job().metadata.uid == failed
    cluster.stack.configure({**cluster.stack.config, "rerun": 1})
    cluster.stack.up()
    assert cluster.job().metadata.uid != failed
    assert cluster.condition("Complete") == "True"
    cluster.stack.destroy()
    assert cluster.left() == {"configmaps": ["input"]}  # the test's own
