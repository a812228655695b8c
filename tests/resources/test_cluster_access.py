"""The Kubernetes provider's `kubernetes:context` and `kubernetes:kubeconfig` settings reach every
resource whose provider talks to the cluster itself, on mocks: the kubeconfig as a secret, and in no
other resource."""

from __future__ import annotations

from typing import Any

from tests.conftest import config
from tests.harness import deploy, deploy_rejected
from tests.plain import is_secret, plain

DYNAMIC = "pulumi-python:dynamic/minicluster:"
TALKING = {f"{DYNAMIC}{kind}" for kind in ("CurveCertificate", "SchedulingGuard", "Scale", "JobDeletion")}
"""The resources whose providers make requests to the cluster: the keygen pod, the guard, a resize, the
elastic Job's deletion."""
ELASTIC = {"command": None, "maxSize": 8}
KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- name: me\n  user: {token: s3cret}\n"


def with_kubeconfig(**settings: Any) -> dict[str, Any]:
    return {**config(**ELASTIC), **settings}


def test_every_resource_that_talks_to_the_cluster_gets_the_kubeconfig_as_a_secret() -> None:
    deployment = deploy(
        with_kubeconfig(**{"kubernetes:kubeconfig": KUBECONFIG}), secret_keys=("kubernetes:kubeconfig",)
    )
    talking = [r for r in deployment.resources if r.typ in TALKING]
    assert {r.typ for r in talking} == TALKING
    for resource in talking:
        assert is_secret(resource.inputs["kubeconfig"]), resource.typ
        assert plain(resource.inputs["kubeconfig"]) == KUBECONFIG


def test_no_other_resource_holds_the_kubeconfig() -> None:
    deployment = deploy(
        with_kubeconfig(**{"kubernetes:kubeconfig": KUBECONFIG}), secret_keys=("kubernetes:kubeconfig",)
    )
    holders = {r.typ for r in deployment.resources if "s3cret" in repr(plain(r.inputs))}
    assert holders == TALKING
    assert "s3cret" not in repr(deployment.outputs)


def test_a_kubeconfig_path_in_plain_config_is_kept_secret_all_the_same() -> None:
    deployment = deploy(with_kubeconfig(**{"kubernetes:kubeconfig": "~/.kube/other"}))
    assert all(is_secret(r.inputs["kubeconfig"]) for r in deployment.resources if r.typ in TALKING)


def test_the_context_setting_reaches_every_resource_that_talks_to_the_cluster() -> None:
    deployment = deploy(with_kubeconfig(**{"kubernetes:context": "kind-flux"}))
    assert {r.typ: r.inputs["kubeContext"] for r in deployment.resources if r.typ in TALKING} == dict.fromkeys(
        TALKING, "kind-flux"
    )


def test_without_the_setting_no_resource_carries_a_kubeconfig_so_an_older_stack_sees_no_change() -> None:
    deployment = deploy(with_kubeconfig())
    assert [r.typ for r in deployment.resources if "kubeconfig" in r.inputs] == []


def test_a_provider_that_renders_yaml_is_refused_before_anything_is_declared() -> None:
    """It creates no object, while the keygen pod would run in the cluster and the guard wait for a Job
    that never comes (seen under a real `pulumi up`)."""
    message, deployment = deploy_rejected(with_kubeconfig(**{"kubernetes:renderYamlToDirectory": "out"}))
    assert message == (
        "kubernetes:renderYamlToDirectory is set (out): the Kubernetes provider would write the MiniCluster's objects "
        "to files and create none, while the MiniCluster itself works in the cluster (the keygen pod, the admission "
        "check, the waits for its pods). Render its objects with this project's scripts/render.py (`--stack dev`) "
        "instead, or unset kubernetes:renderYamlToDirectory to deploy it. Nothing was created."
    )
    assert deployment.resources == []
