"""A pull Secret that is not there, on the real engines: the admission check warns of it by its key (the
real API server's 404), and the real kubelet pulls without it, so a public image's pods run. An image
that needs the Secret would fail to pull, which the scheduling guard stops (test_pods_that_cannot_start.py).
So does a generic Secret that holds a registry's config: the real API server makes it Opaque, and the
kubelet pulls only with a Secret of a registry's type (Kubernetes 1.37's credentialprovider/secrets)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest
from kubernetes import client, watch

from flux_minicluster.cluster import admission
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.loader import load_spec
from tests.engines.control_plane import ControlPlane
from tests.harness import OWNER, example
from tests.realengine.node.conftest import NodeInfo

IMAGE = example("dev")["image"]
"""The dev stack's image: its `:latest` tag makes the kubelet pull it (the node's registry answers)."""


@pytest.fixture
def checked(control_plane: ControlPlane, namespace: str, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """The warnings of the admission check of the dev stack with the pull Secret regcred, against the real
    API server (a refusal fails the test)."""
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))

    def warnings() -> list[str]:
        raw = {**example("dev"), "namespace": namespace, "pod": {"imagePullSecrets": ["regcred"]}}
        verdict = admission.check(load_spec({f"minicluster:{k}": v for k, v in raw.items()}, "dev"), Access(), OWNER)
        assert verdict.refused is None
        return verdict.warnings

    return warnings


def test_the_admission_check_warns_of_it_by_its_key(checked: Callable[[], list[str]], namespace: str) -> None:
    assert (
        "admission check: the Secret 'regcred' that minicluster:pod.imagePullSecrets names does not exist in "
        f"namespace '{namespace}': the kubelet pulls without it, and an image that needs it fails"
    ) in checked()


def test_a_generic_secret_with_a_registrys_config_is_warned_of_by_its_type(
    admin: client.ApiClient, namespace: str, checked: Callable[[], list[str]]
) -> None:
    """As `kubectl create secret generic regcred --from-file=.dockerconfigjson=config.json` makes it."""
    config = json.dumps({"auths": {"registry.example": {"auth": base64.b64encode(b"user:token").decode()}}})
    secret = client.V1Secret(metadata=client.V1ObjectMeta(name="regcred"), string_data={".dockerconfigjson": config})
    client.CoreV1Api(admin).create_namespaced_secret(namespace, secret)
    assert (
        "admission check: the Secret 'regcred' that minicluster:pod.imagePullSecrets names is of type 'Opaque', and "
        "the kubelet pulls only with one of type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg"
    ) in " ".join(checked())


def test_the_real_kubelet_pulls_without_it(admin: client.ApiClient, namespace: str, real_node: NodeInfo) -> None:
    core = client.CoreV1Api(admin)
    container = client.V1Container(name="main", image=IMAGE, command=["true"])
    spec = client.V1PodSpec(
        restart_policy="Never", image_pull_secrets=[client.V1LocalObjectReference(name="regcred")],
        containers=[container],
    )  # fmt: skip
    core.create_namespaced_pod(namespace, client.V1Pod(metadata=client.V1ObjectMeta(name="pulled"), spec=spec))
    phases = watch.Watch().stream(  # type: ignore[no-untyped-call]
        core.list_namespaced_pod, namespace, field_selector="metadata.name=pulled", timeout_seconds=60
    )
    ended = (event["object"].status.phase for event in phases)
    assert next(phase for phase in ended if phase in ("Succeeded", "Failed")) == "Succeeded"
    events = core.list_namespaced_event(namespace, field_selector="involvedObject.name=pulled").items
    assert "Pulled" in [event.reason for event in events]
