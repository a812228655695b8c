"""The keygen pod when the real API server says no: a namespace that does not exist, a user who may not
create pods, and one who may create them but not exec into them. The messages are the real API
server's and RBAC authorizer's, and nothing is left behind, by the provider or by the test kubelet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from flux_minicluster.builders import keygen
from flux_minicluster.cluster import api_calls, kube
from flux_minicluster.cluster.keygen_pod import KeygenError, run_keygen_pod
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.engines.control_plane import ControlPlane
from tests.kubelet.node import Node, selecting
from tests.kubelet.pod import wait_until
from tests.kubelet.pods import Kubelet
from tests.realengine.accounts import kubeconfig_for


def keygen_pod(namespace: str) -> dict[str, Any]:
    raw = config(namespace=namespace, pod=selecting(namespace))
    return keygen.keygen_pod(load_spec({f"minicluster:{key}": value for key, value in raw.items()}, "dev"))


def failure(pod: dict[str, Any]) -> str:
    with pytest.raises(KeygenError) as raised:
        run_keygen_pod(kube.api_client(None), pod, 30, schedule_timeout=30)
    return str(raised.value)


def user(
    admin: client.ApiClient,
    plane: ControlPlane,
    namespace: str,
    tmp: Path,
    verbs: list[str],
    exec_verbs: tuple[str, ...] | list[str] = (),
) -> Path:
    """A kubeconfig for an account that may do `verbs` on pods and `exec_verbs` on pods/exec in `namespace`,
    and nothing else."""
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": verbs}]
    if exec_verbs:
        rules.append({"apiGroups": [""], "resources": ["pods/exec"], "verbs": list(exec_verbs)})
    return kubeconfig_for(admin, plane, namespace, tmp, rules)


def pods(admin: client.ApiClient, namespace: str) -> list[str]:
    found: list[Any] = client.CoreV1Api(admin).list_namespaced_pod(namespace).items
    return [pod.metadata.name for pod in found]


def test_a_namespace_that_does_not_exist_is_named_with_the_command_that_makes_it(
    control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    message = failure(keygen_pod("no-such-namespace"))
    assert "namespace 'no-such-namespace' does not exist: create it (kubectl create namespace no-such-namespace)" in (
        message
    )


def test_a_user_who_may_not_create_pods_is_told_so_in_the_authorizers_words(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("KUBECONFIG", str(user(admin, control_plane, namespace, tmp_path, ["get", "list", "watch"])))
    message = failure(keygen_pod(namespace))
    assert (
        f'access denied (403: pods is forbidden: User "system:serviceaccount:{namespace}:deployer" cannot create '
        f'resource "pods" in API group "" in the namespace "{namespace}") while creating the keygen pod'
    ) in message
    assert "check your RBAC" in message
    assert pods(admin, namespace) == []


def own_node(admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path) -> Node:
    """A Node of the test's own that runs the keygen pod (its nodeSelector picks it), with the image's
    `flux keygen` (real, or the stand-in's real key pair: what is tested here is the exec API's rights)."""
    spec = load_spec({"minicluster:image": "x"}, "dev")
    return Node(Kubelet(tmp_path / "node", spec, objects=[]), control_plane, admin, label=namespace)


@pytest.fixture
def node(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path, test_kubelet: None
) -> Any:
    made = own_node(admin, control_plane, namespace, tmp_path)
    yield made
    made.close()


@pytest.mark.parametrize("exec_verbs", [[], ["create"], ["get"]])
def test_without_get_and_create_on_pods_exec_it_is_one_clear_line_and_the_pod_is_deleted(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, node: Node, exec_verbs: list[str],
) -> None:  # fmt: skip
    verbs = ["get", "list", "watch", "create", "delete"]
    monkeypatch.setenv("KUBECONFIG", str(user(admin, control_plane, namespace, tmp_path, verbs, exec_verbs)))
    message = failure(keygen_pod(namespace))
    assert "\n" not in message
    assert '403: pods "dev-keygen-' in message and "is forbidden: " in message
    assert "while reading the certificate from the keygen pod through the exec API" in message
    if "get" not in exec_verbs:  # the WebSocket upgrade is a GET: RBAC says so first
        assert f'cannot get resource "pods/exec" in API group "" in the namespace "{namespace}"' in message
    assert "this needs get and create on pods/exec" in message
    assert pods(admin, namespace) == []


def test_with_get_and_create_on_pods_exec_the_certificate_comes_and_the_pod_goes(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, node: Node,
) -> None:  # fmt: skip
    verbs = ["get", "list", "watch", "create", "delete"]
    monkeypatch.setenv("KUBECONFIG", str(user(admin, control_plane, namespace, tmp_path, verbs, ["get", "create"])))
    made = run_keygen_pod(kube.api_client(None), keygen_pod(namespace), 30, schedule_timeout=30)
    assert made.public_key and made.secret_key and made.text().startswith("#")
    assert pods(admin, namespace) == []


def test_the_test_kubelet_ends_a_deleted_keygen_pod_still_in_its_grace_period_when_it_closes(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path, test_kubelet: None
) -> None:
    """Found after a CI run: the last test of a worker left the keygen pod's `sleep` running. Its stop
    waits out the grace period in a thread that died with the worker, and closing the Node did not end it.
    The pod is deleted with its own grace period (30 s, as `kubectl delete` does), so that it is still in
    it when the Node closes."""
    made = own_node(admin, control_plane, namespace, tmp_path)
    try:
        created = api_calls.request(admin, "POST", api_calls.pods(namespace), body=keygen_pod(namespace))
        name = created["metadata"]["name"]
        running = wait_until(lambda: made.pods.get(name), "the Node to start the keygen pod", 30)
        container_init = running.pid
        api_calls.request(admin, "DELETE", api_calls.pods(namespace, name))
        wait_until(lambda: name in made.deleting, "the Node to stop the keygen pod", 30)
    finally:
        made.close()
    assert not running.running()
    assert not Path(f"/proc/{container_init}").exists()
