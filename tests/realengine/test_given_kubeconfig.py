"""The cluster given to the Kubernetes provider is the one the MiniCluster's own requests go to, under
the real Pulumi engine and control plane. KUBECONFIG points at no file here, so the admission check, the
keygen pod and the scheduling guard reach the cluster only through the kubeconfig the provider was
given: in the stack's `kubernetes:kubeconfig`, or as the settings of a provider the program passes the
component. Before, they looked for the machine's kubeconfig alone: the check was skipped with a warning
and the keygen pod failed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import yaml

from tests.cluster.test_credential_plugin import with_credential_plugin
from tests.engines.control_plane import ControlPlane
from tests.harness import example
from tests.realengine.pulumi_stack import Stack, StackOnNode, example_program, example_properties

SKIPPED = "admission check skipped"


def without_kubeconfig(made: StackOnNode, tmp_path: Path) -> None:
    made.stack.env["KUBECONFIG"] = str(tmp_path / "no-kubeconfig")


def test_a_stack_with_its_kubeconfig_in_its_config_runs_its_job_and_keeps_the_token_secret(
    stack_on_node: Callable[..., StackOnNode], control_plane: ControlPlane, tmp_path: Path
) -> None:
    dev = stack_on_node("dev", **example("dev"))
    without_kubeconfig(dev, tmp_path)
    dev.stack.set_secret("kubernetes:kubeconfig", control_plane.kubeconfig.read_text())
    done = dev.stack.up()
    assert SKIPPED not in done.stdout + done.stderr
    assert control_plane.admin_token not in done.stdout + done.stderr
    assert dev.condition("Complete") == "True"
    assert control_plane.admin_token not in dev.stack.state_text()  # the provider's and ours: secrets
    dev.stack.destroy()
    assert dev.left() == {}


def test_a_yaml_program_that_passes_its_provider_runs_its_job_through_it(
    stack_on_node: Callable[..., StackOnNode], control_plane: ControlPlane, tmp_path: Path
) -> None:
    hello = stack_on_node("hello", example="yaml", **example_properties("yaml", "hello"))
    without_kubeconfig(hello, tmp_path)
    file = hello.stack.project / "Pulumi.yaml"
    program = yaml.safe_load(file.read_text())
    program["config"] = {"kubeconfig": {"type": "string", "secret": True}}
    program["resources"] = {
        "cluster": {"type": "pulumi:providers:kubernetes", "properties": {"kubeconfig": "${kubeconfig}"}},
        "hello": {**program["resources"]["hello"], "options": {"providers": ["${cluster}"]}},
    }
    file.write_text(yaml.safe_dump(program))
    hello.stack.set_secret("kubeconfig", control_plane.kubeconfig.read_text())
    done = hello.stack.up()
    assert SKIPPED not in done.stdout + done.stderr
    assert control_plane.admin_token not in done.stdout + done.stderr
    assert hello.condition("Complete") == "True"
    assert control_plane.admin_token not in hello.stack.state_text()
    hello.stack.destroy()
    assert hello.left() == {}


def test_a_preview_before_the_providers_kubeconfig_is_known_shows_the_component_alone(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    # A provider whose kubeconfig comes from a resource not made yet (as from the cluster the program
    # makes): here a ConfigMap's uid, unknown until it is created.
    program = yaml.safe_load(example_program("yaml", "hello", {**example_properties("yaml", "hello"),
                                                                "namespace": namespace}))  # fmt: skip
    program["resources"] = {
        "source": {"type": "kubernetes:core/v1:ConfigMap", "properties": {"metadata": {"namespace": namespace}}},
        "cluster": {"type": "pulumi:providers:kubernetes", "properties": {"kubeconfig": "${source.metadata.uid}"}},
        "hello": {**program["resources"]["hello"], "options": {"providers": ["${cluster}"]}},
    }
    stack = Stack(control_plane, tmp_path / "stack", "dev", {}, program=yaml.safe_dump(program))
    previewed = stack.pulumi("preview")
    assert "the Kubernetes provider's kubeconfig not known until the resources it comes from exist" in previewed.stdout
    assert "minicluster:index:CurveCertificate" not in previewed.stdout


def test_a_kubeconfig_whose_credential_plugin_gives_the_token_runs_the_job(
    stack_on_node: Callable[..., StackOnNode], control_plane: ControlPlane, tmp_path: Path
) -> None:
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": control_plane.admin_token}}  # fmt: skip
    dev = stack_on_node("dev", **example("dev"))
    dev.stack.env["KUBECONFIG"] = str(
        with_credential_plugin(control_plane.kubeconfig, tmp_path, f"echo '{json.dumps(credential)}'")
    )
    done = dev.stack.up()
    assert SKIPPED not in done.stdout + done.stderr
    assert dev.condition("Complete") == "True"


def test_a_credential_plugin_that_fails_stops_pulumi_up_in_its_own_words_before_anything_is_created(
    stack_on_node: Callable[..., StackOnNode], control_plane: ControlPlane, tmp_path: Path
) -> None:
    """Not logged in to the cloud, say. The `kubernetes` client logged the plugin's failure and went on
    without credentials: the admission check was skipped and the keygen pod refused, each as
    `system:anonymous` lacking RBAC rights, and the plugin's words were a bare `ERROR:root:` line."""
    dev = stack_on_node("dev", **example("dev"))
    failing = "echo 'error: you are not logged in: run cloud-login' >&2; exit 1"
    kubeconfig = with_credential_plugin(control_plane.kubeconfig, tmp_path, failing)
    dev.stack.env["KUBECONFIG"] = str(kubeconfig)
    refused = dev.stack.up(check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert (
        f"error: the credential plugin of the kubeconfig {kubeconfig} (its user's `exec`) gave no credentials: exec: "
        "process returned 1. error: you are not logged in: run cloud-login. Run `kubectl get namespaces` with the "
        "same kubeconfig and context to see it fail, then log in again.\n    Nothing was created."
    ) in said
    assert "system:anonymous" not in said and "ERROR:root" not in said
    assert dev.stack.resource_types() == ["pulumi:pulumi:Stack"]
    assert dev.left() == {}


def test_the_ops_tool_reads_the_stacks_encrypted_kubeconfig_through_pulumi(
    stack_on_node: Callable[..., StackOnNode], control_plane: ControlPlane, tmp_path: Path
) -> None:
    """A kubeconfig set with --secret (it holds credentials): the tool went to KUBECONFIG's current
    context, another cluster or none, as here."""
    dev = stack_on_node("dev", **example("dev"))
    without_kubeconfig(dev, tmp_path)
    dev.stack.set_secret("kubernetes:kubeconfig", control_plane.kubeconfig.read_text())
    dev.stack.up()
    said = dev.stack.ops("status")
    assert "Complete" in said and control_plane.admin_token not in said
