"""A pull Secret that is not there, on the real node: the admission check warns of it by its key, and
the real kubelet pulls without it, so a public image's pods run and
`pulumi up` completes. An image that needs the Secret would fail to pull, which the scheduling guard
stops (test_pods_that_cannot_start.py)."""

from __future__ import annotations

from collections.abc import Callable

from kubernetes import client

from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode


def test_a_pull_secret_that_is_not_there_is_a_warning_and_a_public_image_runs(
    stack_on_real_node: Callable[..., StackOnRealNode], admin: client.ApiClient
) -> None:
    cluster = stack_on_real_node("dev", **example("dev"), pod={"imagePullSecrets": ["regcred"]})
    done = cluster.stack.up()
    said = " ".join(done.stdout.split())
    assert (
        "admission check: the Secret 'regcred' that minicluster:pod.imagePullSecrets names does not exist in "
        f"namespace '{cluster.namespace}': the kubelet pulls without it"
    ) in said
    assert cluster.condition("Complete") == "True"
    # the brokers' pods name the Secret, and the kubelet pulled their image without it (it says nothing of it)
    assert {pod.spec.image_pull_secrets[0].name for pod in cluster.pods()} == {"regcred"}
    events = client.CoreV1Api(admin).list_namespaced_event(cluster.namespace).items
    pulled = {event.involved_object.name for event in events if event.reason == "Pulled"}
    assert {pod.metadata.name for pod in cluster.pods()} <= pulled
