"""The dev stack under the real Pulumi engine, its pods in real containers on the real node: `pulumi up`
makes the certificate in a keygen pod (read over the real exec API), creates the MiniCluster on the real
control plane and returns once the real Job controller has marked the Job complete; the outputs name
what was created. What the brokers did (rank 0's command on every node) needs real Flux: marked
realflux. The README's own command runs the same stack, then `pulumi destroy`, which leaves nothing in
the namespace or the state: test_readme_main_command.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode


@pytest.fixture(scope="module")
def upped(module_stack_on_real_node: Callable[..., StackOnRealNode]) -> StackOnRealNode:
    """After `pulumi up`, as it is (the certificate from a keygen pod): one for the checks that read it."""
    dev = module_stack_on_real_node("dev", **example("dev"))
    dev.stack.up()
    return dev


def test_pulumi_up_returns_once_the_dev_stacks_job_completed(upped: StackOnRealNode) -> None:
    assert upped.condition("Complete") == "True"
    assert sorted(pod.status.phase for pod in upped.pods()) == ["Succeeded"] * 4


@pytest.mark.realflux
def test_the_dev_stacks_command_ran_on_every_broker(upped: StackOnRealNode) -> None:
    hostnames = [line for line in upped.log(0).splitlines() if line.startswith("dev-")]
    assert sorted(hostnames) == ["dev-0", "dev-1", "dev-2", "dev-3"]


def test_the_outputs_name_what_pulumi_up_created(upped: StackOnRealNode) -> None:
    outputs = upped.stack.outputs()
    named = (outputs["jobName"], outputs["namespace"], outputs["size"])
    assert named == (upped.job().metadata.name, upped.namespace, 4)
    service: Any = client.CoreV1Api(upped.admin).read_namespaced_service(outputs["serviceName"], upped.namespace)
    assert service.spec.cluster_ip == "None"  # the headless Service the pods' hostnames live under
    rank0: Any = client.CoreV1Api(upped.admin).read_namespaced_pod(upped.pod_name(0), upped.namespace)
    assert outputs["rank0Hostname"] == rank0.spec.hostname  # Flux's name of rank 0, the pod's hostname
    # logsCommand selects rank 0's pod, and its container (the Flux broker's, the only one)
    words = outputs["logsCommand"].split()
    (container,) = upped.job().spec.template.spec.containers
    assert words[:3] == ["kubectl", "logs", "-f"] and words[words.index("-c") + 1] == container.name
    selected: Any = client.CoreV1Api(upped.admin).list_namespaced_pod(
        upped.namespace, label_selector=words[words.index("-l") + 1]
    )
    assert [pod.metadata.name for pod in selected.items] == [upped.pod_name(0)]


@pytest.mark.realflux
def test_what_the_pre_hook_exports_is_the_commands_environment(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    """As when the flux-operator pastes its commands into its entrypoint: Flux runs the command with the
    environment `flux submit` was started in, the broker's."""
    hooks = {"pre": "export GREETING=hello-from-pre"}
    settings = {"size": 2, "tasks": 2, "hooks": hooks, "command": "sh -c 'echo greeting: $GREETING'"}
    cluster = stack_on_real_node("dev", **{**example("dev"), **settings})
    cluster.stack.up()
    assert [line for line in cluster.log(0).splitlines() if line.startswith("greeting:")] == [
        "greeting: hello-from-pre"
    ] * 2


@pytest.mark.realflux
def test_a_shell_script_over_several_lines_runs_whole(stack_on_real_node: Callable[..., StackOnRealNode]) -> None:
    """A YAML block whose `sh -c` script spans lines, as the config's error for a command a line advises:
    the script's line breaks stay inside its word on the way to Flux (they once split it into two words,
    and `sh` ran the first line alone)."""
    script = "sh -c 'echo first line\necho second line on $(hostname)'\n"
    cluster = stack_on_real_node("dev", **{**example("dev"), "size": 2, "tasks": 1, "command": script})
    cluster.stack.up()
    said = [line for line in cluster.log(0).splitlines() if line == "first line" or line.startswith("second line")]
    assert said == ["first line", "second line on dev-0"]
