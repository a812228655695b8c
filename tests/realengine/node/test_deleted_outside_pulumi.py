"""A MiniCluster whose objects were deleted outside Pulumi (here its namespace, deleted and made anew),
under the real Pulumi engine and the real node, as the README's troubleshooting says: `pulumi up`
compares with its state and changes nothing; `pulumi up --refresh` reads the cluster first, finds the
objects gone, and makes them again (the certificate from the state, the keeper after the new Job's pods)."""

from __future__ import annotations

import re
from collections.abc import Callable

from kubernetes import client

from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.stacks import StackOnRealNode


def made_anew(core: client.CoreV1Api, namespace: str) -> None:
    core.delete_namespace(namespace)

    def gone() -> bool:
        try:
            core.read_namespace(namespace)
        except client.ApiException as error:
            return bool(error.status == 404)
        return False

    wait_until(gone, f"namespace {namespace} to be gone", 120, poll=0.5)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))

    def account() -> bool:  # the controller makes it soon after; a pod is refused until then
        try:
            core.read_namespaced_service_account("default", namespace)
        except client.ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    wait_until(account, f"the default ServiceAccount of {namespace}", 60, poll=0.2)


def test_pulumi_up_refresh_makes_again_what_was_deleted_outside_it(
    stack_on_real_node: Callable[..., StackOnRealNode], admin: client.ApiClient, namespace: str
) -> None:
    cluster = stack_on_real_node("kept", **{**example("interactive"), "size": 2, "keeper": {"enabled": True}})
    cluster.stack.up()
    made_anew(client.CoreV1Api(admin), namespace)
    assert re.search(r"Resources:\s+\d+ unchanged\s+Duration", cluster.stack.up().stdout)  # nothing else
    assert cluster.left() == {}
    cluster.stack.pulumi("up", "--refresh", "--yes", "--skip-preview")
    assert sorted(pod.status.phase for pod in cluster.pods()) == ["Running", "Running"]
    left = cluster.left()
    assert (left["jobs"], left["deployments"], len(left["secrets"])) == (["kept"], ["kept-keeper"], 1)
    cluster.stack.destroy()
    assert cluster.left() == {}
