"""Secret config under the real Pulumi engine, the pods in real containers: a value set with `pulumi
config set --secret` and the certificate's secret key (from the keygen pod) are, after a real `pulumi
up`, in no file of the state in plain text, in no object on the API server but their own Secret, in no
output and in nothing the CLI printed; the value reaches the brokers' environment through the
kubelet's secretKeyRef."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode


def holders(cluster: StackOnRealNode, text: str) -> list[str]:
    """Every object of the namespace whose JSON holds `text`, a Secret's data decoded, as `kind/name`."""
    core, batch = client.CoreV1Api(cluster.admin), client.BatchV1Api(cluster.admin)
    listings: dict[str, Any] = {
        "Job": batch.list_namespaced_job, "Pod": core.list_namespaced_pod, "ConfigMap": core.list_namespaced_config_map,
        "Service": core.list_namespaced_service, "Event": core.list_namespaced_event,
    }  # fmt: skip
    found = []
    for kind, listing in listings.items():
        for obj in listing(cluster.namespace).items:
            if text in json.dumps(cluster.admin.sanitize_for_serialization(obj)):  # type: ignore[no-untyped-call]
                found.append(f"{kind}/{obj.metadata.name}")
    secret: Any
    for secret in core.list_namespaced_secret(cluster.namespace).items:
        if any(text in base64.b64decode(value).decode() for value in (secret.data or {}).values()):
            found.append(f"Secret/{secret.metadata.name}")
    return found


@pytest.fixture(scope="module")
def deployed(module_stack_on_real_node: Callable[..., StackOnRealNode]) -> tuple[StackOnRealNode, str, str]:
    """The dev stack with a secret environment value, after `pulumi up`: the stack, the value, and what
    the CLI printed. One for the module's checks, which only read it."""
    cluster = module_stack_on_real_node("dev", **example("dev"))
    token = secrets.token_hex(16)
    cluster.stack.set_secret("minicluster:environment.API_TOKEN", token)
    printed = cluster.stack.up()
    return cluster, token, printed.stdout + printed.stderr


def test_a_secret_config_value_is_held_by_its_secret_alone(deployed: tuple[StackOnRealNode, str, str]) -> None:
    cluster, token, _ = deployed
    (holder,) = holders(cluster, token)
    assert holder.startswith("Secret/dev-config-secret-")
    (container,) = cluster.job().spec.template.spec.containers
    (api_token,) = [var for var in container.env if var.name == "API_TOKEN"]
    assert api_token.value is None and f"Secret/{api_token.value_from.secret_key_ref.name}" == holder


def test_a_secret_config_value_is_not_in_the_state_the_outputs_or_the_cli_output(
    deployed: tuple[StackOnRealNode, str, str],
) -> None:
    cluster, token, printed = deployed
    assert token not in cluster.stack.state_text()
    assert token not in json.dumps(cluster.stack.outputs())
    assert token not in printed + cluster.stack.preview().stdout


def test_the_certificates_secret_key_is_in_its_secret_alone_and_not_in_the_state(
    deployed: tuple[StackOnRealNode, str, str],
) -> None:
    cluster, _, printed = deployed
    core = client.CoreV1Api(cluster.admin)
    stored: list[Any] = core.list_namespaced_secret(cluster.namespace).items
    (curve,) = [secret for secret in stored if secret.metadata.name.startswith("dev-curve-")]
    certificate = base64.b64decode(next(iter(curve.data.values()))).decode()
    (secret_key,) = [line.split('"')[1] for line in certificate.splitlines() if "secret-key" in line]
    assert holders(cluster, secret_key) == [f"Secret/{curve.metadata.name}"]
    assert secret_key not in cluster.stack.state_text() + json.dumps(cluster.stack.outputs()) + printed


def test_a_secret_value_reaches_the_brokers_environment(stack_on_real_node: Callable[..., StackOnRealNode]) -> None:
    cluster = stack_on_real_node("interactive", **{**example("interactive"), "size": 2})
    token = secrets.token_hex(16)
    cluster.stack.set_secret("minicluster:environment.API_TOKEN", token)
    cluster.stack.up()
    assert [cluster.exec(rank, "printenv", "API_TOKEN").strip() for rank in (0, 1)] == [token, token]
    (holder,) = holders(cluster, token)
    assert holder.startswith("Secret/interactive-config-secret-")


@pytest.mark.realflux
def test_a_secret_command_that_fails_is_in_no_error_pod_status_or_state(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    """Flux logs its initial program's words, and a failed pod's log tail becomes its termination message,
    which `pulumi up`'s error shows and Pulumi's state keeps: the command line leaked through all three."""
    token = f"tok-{secrets.token_hex(8)}"
    cluster = stack_on_real_node("dev", **{**example("dev"), "size": 2, "tasks": 2, "command": None})
    cluster.stack.set_secret("minicluster:command", f"sh -c 'echo the run failed; exit 3' {token}")
    failed = cluster.stack.up(check=False)
    assert failed.returncode != 0
    assert "the run failed" in failed.stdout and "minicluster[rank 0]: exiting with status 3" in failed.stdout
    assert token not in failed.stdout + failed.stderr
    (holder,) = holders(cluster, token)
    assert holder.startswith("Secret/dev-config-secret-")
    assert token not in cluster.stack.state_text()
