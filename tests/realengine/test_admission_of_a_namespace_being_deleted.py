"""The admission check in a namespace being deleted, as `kubectl delete namespace` leaves it for a while
(here, until a finalizer of an object in it is taken off): the real API server's NamespaceLifecycle
admission refuses every object alike, and the check says so once, by the namespace, before anything is
created. Once the namespace is gone, the refusal is the usual one of a namespace that does not exist."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from kubernetes import client

from flux_minicluster.cluster import admission
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.engines.control_plane import ControlPlane
from tests.harness import OWNER
from tests.kubelet.pod import wait_until

HOLD = "minicluster.test/hold"
"""A finalizer nobody acts on: the namespace stays Terminating until the test takes it off."""


@pytest.fixture
def being_deleted(
    admin: client.ApiClient, control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    core, name = client.CoreV1Api(admin), f"t-{secrets.token_hex(4)}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    held = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="held", finalizers=[HOLD]))
    core.create_namespaced_config_map(name, held)
    core.delete_namespace(name)
    try:
        yield name
    finally:
        let_go(core, name)


def let_go(core: client.CoreV1Api, namespace: str) -> None:
    """Takes the finalizer off, so that the namespace goes (if it is still there)."""
    try:
        core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})
    except client.ApiException as error:
        if error.status != 404:
            raise


def verdict(namespace: str, *, preview: bool = False) -> admission.Verdict:
    raw = config(namespace=namespace)
    return admission.check(
        load_spec({f"minicluster:{k}": v for k, v in raw.items()}, "dev"), Access(), OWNER, preview=preview
    )


def test_every_object_refused_alike_is_said_once_by_the_namespace(being_deleted: str) -> None:
    assert verdict(being_deleted).refused == (
        "the API server refuses MiniCluster 'dev' (a dry run):\n"
        f"  - namespace '{being_deleted}' is being deleted, and the API server takes nothing new in it: once it is "
        "gone, create it again, or set minicluster:namespace\n"
        "Nothing was created."
    )


def test_a_preview_is_refused_too_as_no_program_can_make_it_again_before_it_is_gone(being_deleted: str) -> None:
    refused = verdict(being_deleted, preview=True).refused
    assert refused is not None and f"namespace '{being_deleted}' is being deleted" in refused


def test_once_it_is_gone_it_is_a_namespace_that_does_not_exist(admin: client.ApiClient, being_deleted: str) -> None:
    core = client.CoreV1Api(admin)
    let_go(core, being_deleted)

    def gone() -> bool:
        return not core.list_namespace(field_selector=f"metadata.name={being_deleted}").items

    wait_until(gone, "the namespace to be gone", 60, poll=0.2)
    refused = verdict(being_deleted).refused
    assert refused is not None and f"namespace '{being_deleted}' does not exist: create it" in refused
