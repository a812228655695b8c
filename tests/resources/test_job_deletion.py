"""Destroying (or replacing) an elastic Job waits until the Job and its pods are gone (issue 22): the
JobDeletion resource in the program on mocks, and its provider over gRPC, as the engine drives it,
with the real client against the API stand-in."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from flux_minicluster.builders.names import labels
from flux_minicluster.cluster import api_calls, kube
from flux_minicluster.cluster.deletion import wait_until_gone
from flux_minicluster.cluster.waiting import Progress
from flux_minicluster.resources import deletion
from tests.conftest import config
from tests.harness import deploy
from tests.kube_api import Cluster, StandIn, running
from tests.kube_api.samples import BROKER, DEV, broker_pod, job
from tests.provider_plugin import ProviderPlugin, grpc_error, served

DELETION = "pulumi-python:dynamic/minicluster:JobDeletion"
JOB = "kubernetes:batch/v1:Job"
ELASTIC = {"command": None, "size": 4, "maxSize": 8}


def test_the_elastic_job_depends_on_its_deletion_which_is_replaced_delete_first() -> None:
    deployment = deploy(config(**ELASTIC))
    waiter = deployment.one(DELETION)
    assert deployment.urn(waiter) in deployment.options["dev-job"]["dependencies"]  # deleted after the Job
    assert deployment.options[waiter.name]["deleteBeforeReplace"] is True
    # and replaced with it: only then does the engine delete the Job before the deletion's delete waits
    # for it (a dependsOn edge alone leaves the Job standing: tests/realengine/node/test_image_change.py)
    assert deployment.options["dev-job"]["replaceWith"] == [deployment.urn(waiter)]
    assert waiter.inputs["timeout"] == 90  # the pods' grace period (30 s) and a margin


def test_a_resize_keeps_the_deletion_and_a_new_pod_template_replaces_it() -> None:
    def identity(**overrides: Any) -> str:
        return str(deploy(config(**{**ELASTIC, **overrides})).one(DELETION).inputs["identity"])

    assert identity(size=6) == identity()  # the same Job, resized
    assert identity(image="fluxrm/flux-sched:noble") != identity()  # a new Job


def test_a_one_shot_job_has_one_too_for_an_elastic_job_it_replaces() -> None:
    """pulumi-kubernetes awaits a Job's deletion by the old Job's annotations: an elastic one (skipAwait)
    replaced by a one-shot one was not awaited (tests/realengine/node/test_image_change.py)."""
    deployment = deploy(config())
    waiter = deployment.one(DELETION)
    assert deployment.options["dev-job"]["replaceWith"] == [deployment.urn(waiter)]


@pytest.fixture(scope="module")
def plugin(api_server: StandIn) -> Iterator[ProviderPlugin]:
    yield from served(deletion.JobDeletionProvider(), DELETION, api_server.cluster.kubeconfig)


def inputs(timeout: int = 90) -> dict[str, Any]:
    return {"namespace": "default", "job": "dev", "selector": labels(DEV, "broker"), "identity": "a" * 64,
            "timeout": timeout}  # fmt: skip


def terminating(api: Cluster) -> None:
    """The Job and its pods as Pulumi leaves them: deleted, still going."""
    api.add_job(job())
    for rank in range(DEV.size):
        api.add_pod(broker_pod(rank, running(BROKER)))


def test_delete_returns_once_the_job_and_its_pods_are_gone(plugin: ProviderPlugin, api: Cluster) -> None:
    terminating(api)

    def controllers_finish() -> None:  # the Job goes, then its pods, as the garbage collector and kubelets end them
        while not api.watches:  # once the delete waits for them
            time.sleep(0.01)
        with api.lock:
            gone.append(time.monotonic())  # before they go: a delete that returned sooner finds no time here
            api.jobs.clear()
            for namespace, name in list(api.pods):
                api.delete_pod(namespace, name)

    gone: list[float] = []
    threading.Thread(target=controllers_finish, daemon=True).start()
    plugin.delete("default/dev", plugin.with_provider(inputs()))
    assert gone  # it returned only after they went
    # Their end seen by the watch on the pods: one list, the watch's own, and none after it began (a
    # poll's next look would be a minute away); the Job read once, after its pods went.
    assert api.watches == [api_calls.pods("default")]
    assert (api.reads("/pods"), api.reads("/jobs/dev")) == (1, 1)


def test_with_foreground_deletion_the_job_that_outlives_its_pods_is_waited_for(
    plugin: ProviderPlugin, api: Cluster
) -> None:
    terminating(api)

    def controllers_finish() -> None:  # foreground deletion: the pods first, the Job a moment after
        while not api.watches:
            time.sleep(0.01)
        for namespace, name in list(api.pods):
            api.delete_pod(namespace, name)
        time.sleep(0.5)
        with api.lock:
            gone.append(time.monotonic())
            api.jobs.clear()

    gone: list[float] = []
    threading.Thread(target=controllers_finish, daemon=True).start()
    plugin.delete("default/dev", plugin.with_provider(inputs()))
    assert gone  # it returned only after the Job went, not at its pods' end
    assert api.watches == [api_calls.pods("default")]


def test_delete_of_a_job_already_gone_returns_at_once(plugin: ProviderPlugin, api: Cluster) -> None:
    plugin.delete("default/dev", plugin.with_provider(inputs()))
    assert (api.reads("/pods"), api.reads("/jobs/dev"), api.watches) == (1, 1, [])  # one look, no wait


def test_pods_that_outlive_the_wait_fail_the_delete_naming_them(plugin: ProviderPlugin, api: Cluster) -> None:
    terminating(api)
    details = grpc_error(lambda: plugin.delete("default/dev", plugin.with_provider(inputs(timeout=1))))
    assert (
        "after 1s, the Job default/dev and 4 of its pods (dev-0-abcde, dev-1-abcde, dev-2-abcde, dev-3-abcde)"
        in details
    )
    assert "still exist" in details


def test_pods_slow_to_go_are_said_once_past_the_first_seconds(
    api: Cluster, api_server: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker may take its grace period to stop: `pulumi destroy` says what it waits for meanwhile,
    and a quick deletion says nothing."""
    monkeypatch.setenv("KUBECONFIG", str(api_server.cluster.kubeconfig))
    monkeypatch.setattr(Progress, "AFTER", 0.2)  # a watch lasts a whole second at least: it is said by then
    terminating(api)
    threading.Timer(2.5, api.delete_everything).start()
    said: list[str] = []
    gone = wait_until_gone(kube.api_client(None), "default", "dev", labels(DEV, "broker"), 30, say=said.append)
    assert gone == "the Job default/dev and its pods are gone"
    assert said == [
        "waiting up to 30s for 4 pods (dev-0-abcde, dev-1-abcde, dev-2-abcde, ...) of the Job default/dev to be gone"
    ]
