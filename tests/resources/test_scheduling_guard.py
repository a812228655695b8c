"""The scheduling guard (issue 12): driven over gRPC as the engine drives it, with the real client in
the plugin process against the API stand-in; and on mocks, how the program wires it beside the Job."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from flux_minicluster.builders.names import REVISION, STOPPED, labels
from flux_minicluster.cluster import api_calls
from flux_minicluster.config.loader import load_spec
from flux_minicluster.resources import scheduling
from tests.conftest import config
from tests.harness import deploy
from tests.kube_api import Cluster, StandIn, running, unschedulable, waiting
from tests.kube_api.samples import BROKER, JOB_REVISION, broker_pod, job
from tests.provider_plugin import ProviderPlugin, grpc_error, served

GUARD = "pulumi-python:dynamic/minicluster:SchedulingGuard"
SPEC = load_spec({f"minicluster:{k}": v for k, v in config().items()}, "dev")
URN = "urn:pulumi:dev::minicluster::minicluster:index:MiniCluster$kubernetes:batch/v1:Job::dev-job"
FULL = "0/3 nodes are available: 3 Insufficient cpu."


def stop_patch(cannot: str) -> dict[str, Any]:
    """The guard's patch of a Job whose pods could not do `cannot` (scheduleTimeout 1): already past, and why."""
    why = f"its pods could not {cannot} for 1s (minicluster:scheduleTimeout)"
    return {"metadata": {"annotations": {STOPPED: why}}, "spec": {"activeDeadlineSeconds": 1}}  # a whole number


STOP = stop_patch("be scheduled")


@pytest.fixture(scope="module")
def plugin(api_server: StandIn) -> Iterator[ProviderPlugin]:
    yield from served(scheduling.SchedulingGuardProvider(), GUARD, api_server.cluster.kubeconfig)


def inputs(plugin: ProviderPlugin, **overrides: Any) -> dict[str, Any]:
    given = {"namespace": "default", "job": "dev", "selector": labels(SPEC, "broker"), "size": 4,
             "scheduleTimeout": 1, "jobUrn": URN, "revision": JOB_REVISION}  # fmt: skip
    return plugin.with_provider({**given, **overrides})


def patches(api: Cluster) -> list[Any]:
    return [body for method, path, body in api.requests if method == "PATCH"]


def test_done_as_soon_as_every_pod_has_started(plugin: ProviderPlugin, api: Cluster) -> None:
    api.add_job(job())
    for rank in range(4):
        api.add_pod(broker_pod(rank, running(BROKER)))
    resource_id, outs = plugin.create(inputs(plugin))
    assert (api.reads("/pods"), api.watches) == (1, [])  # one look, then done: no wait, no watch
    assert outs["outcome"] == "all 4 pods of the Job default/dev started"
    assert resource_id == f"default/dev/{JOB_REVISION[:12]}"
    assert patches(api) == []


def test_done_at_the_watched_change_that_starts_the_last_pod(plugin: ProviderPlugin, api: Cluster) -> None:
    """Woken by the pods' changes (a watch), not by a poll; a pod with a node is not done until its
    containers start (its images pulled, its init containers run)."""
    api.add_job(job())
    for rank in range(4):
        api.add_pod(broker_pod(rank, {"phase": "Pending"}, node=None))

    def scheduler_binds_then_kubelet_starts() -> None:  # once the guard watches the pods
        while not api.watches:
            time.sleep(0.01)
        with api.lock:
            reads_before.append(api.reads("/pods"))
            for pod in list(api.pods.values()):
                pod["spec"]["nodeName"] = "node-1"
                pod["status"] = waiting("ContainerCreating", container=BROKER)
                api._record("MODIFIED", pod)
        with api.lock:
            for pod in list(api.pods.values()):
                pod["status"] = running(BROKER)
                api._record("MODIFIED", pod)

    reads_before: list[int] = []
    threading.Thread(target=scheduler_binds_then_kubelet_starts, daemon=True).start()
    _, outs = plugin.create(inputs(plugin))
    assert outs["outcome"] == "all 4 pods of the Job default/dev started"
    # The watch's event is what ended it: one list before the watch, and no look at the pods after the start
    # (a poll's next look would be a minute away).
    assert reads_before == [1] and api.reads("/pods") == 1
    assert api.watches == [api_calls.pods("default")]


def test_pods_whose_image_cannot_be_pulled_stop_the_job_and_say_which(plugin: ProviderPlugin, api: Cluster) -> None:
    """A mistyped image would otherwise hold `pulumi up` for jobTimeout: the pods have their node, and
    pulumi-kubernetes waits for the Job."""
    api.add_job(job())
    for rank in range(4):
        api.add_pod(broker_pod(rank, waiting("ImagePullBackOff", "Back-off pulling image", container=BROKER)))
    details = grpc_error(lambda: plugin.create(inputs(plugin)))
    assert (
        f"the Job's pods could not start for 1s (minicluster:scheduleTimeout): container '{BROKER}' cannot pull "
        f"image '{SPEC.image}' (ImagePullBackOff: Back-off pulling image); check the image's name and tag, and "
        "minicluster:pod.imagePullSecrets. The Job was stopped" in details
    )
    assert "after any other fix (the image pushed, the pull Secret or the ConfigMap made)" in details
    assert patches(api) == [stop_patch("start")]


def test_pods_whose_container_cannot_be_made_stop_the_job_too(plugin: ProviderPlugin, api: Cluster) -> None:
    api.add_job(job())
    missing = "couldn't find key token in ConfigMap default/settings"
    for rank in range(4):
        api.add_pod(broker_pod(rank, waiting("CreateContainerConfigError", missing, container=BROKER)))
    details = grpc_error(lambda: plugin.create(inputs(plugin)))
    made = f"container '{BROKER}' cannot be made (CreateContainerConfigError: {missing}). The Job was stopped"
    assert made in details
    assert patches(api) == [stop_patch("start")]


def test_pods_still_pulling_their_images_past_the_schedule_timeout_are_not_stopped(
    plugin: ProviderPlugin, api: Cluster
) -> None:
    """A large image takes its time: only a pull that fails counts."""
    api.add_job(job())
    for rank in range(4):
        api.add_pod(broker_pod(rank, waiting("ContainerCreating", container=BROKER)))

    def kubelet_starts_later() -> None:
        while not api.watches:
            time.sleep(0.01)
        time.sleep(1.5)  # past scheduleTimeout (1 s)
        with api.lock:
            for pod in list(api.pods.values()):
                pod["status"] = running(BROKER)
                api._record("MODIFIED", pod)

    threading.Thread(target=kubelet_starts_later, daemon=True).start()
    _, outs = plugin.create(inputs(plugin))
    assert outs["outcome"] == "all 4 pods of the Job default/dev started"
    assert patches(api) == []


def test_pods_that_stay_unschedulable_stop_the_job_and_say_why(plugin: ProviderPlugin, api: Cluster) -> None:
    api.add_job(job())
    api.add_pod(broker_pod(0, running(BROKER)))
    for rank in (1, 2, 3):
        api.add_pod(broker_pod(rank, unschedulable(FULL), node=None))
    details = grpc_error(lambda: plugin.create(inputs(plugin)))
    assert (
        f"the Job's pods could not be scheduled for 1s (minicluster:scheduleTimeout): Unschedulable: {FULL}" in details
    )
    assert f"pulumi up --replace '{URN}'" in details
    assert patches(api) == [STOP]
    assert api.jobs[("default", "dev")]["spec"]["activeDeadlineSeconds"] == 1


def test_pods_the_job_cannot_create_stop_it_too(plugin: ProviderPlugin, api: Cluster) -> None:
    api.add_job(job())
    over_quota = (
        'pods "dev-0-abcde" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=3, limited: pods=3'
    )
    api.add_event("default", "dev", "FailedCreate", over_quota, kind="Job")
    details = grpc_error(lambda: plugin.create(inputs(plugin)))
    assert f"could not be created for 1s (minicluster:scheduleTimeout): FailedCreate: {over_quota}" in details
    assert patches(api) == [stop_patch("be created")]


def test_pods_that_wait_without_a_reason_to_stop_end_the_guard_at_the_jobs_own_timeout(
    plugin: ProviderPlugin, api: Cluster
) -> None:
    """A volume the kubelet cannot mount holds a pod in ContainerCreating with no reason the guard stops
    for: the Job's own wait times out at jobTimeout, and the engine, which waits for the guard as well,
    must not wait past it."""
    api.add_job(job())
    for rank in range(4):
        api.add_pod(broker_pod(rank, waiting("ContainerCreating", container=BROKER)))
    _, outs = plugin.create(inputs(plugin, jobTimeout=2, scheduleTimeout=1))
    assert outs["outcome"] == "not every pod of the Job default/dev started within 2s (minicluster:jobTimeout)"
    assert patches(api) == []  # the Job's own wait says why


def test_a_job_that_already_finished_needs_no_guard(plugin: ProviderPlugin, api: Cluster) -> None:
    api.add_job(job("Complete"))
    _, outs = plugin.create(inputs(plugin))
    assert outs["outcome"] == "the Job default/dev finished"


# -- on mocks: beside the Job, not after it -------------------------------------------------------


def test_the_guard_runs_beside_the_job_with_its_inputs() -> None:
    deployment = deploy({**config(), "kubernetes:context": "kind-flux"})
    guard, job_resource = deployment.one(GUARD), deployment.one("kubernetes:batch/v1:Job")
    assert deployment.parent(guard) == deployment.urn(deployment.one("minicluster:index:MiniCluster"))
    given = guard.inputs
    assert (given["namespace"], given["job"], given["size"], given["scheduleTimeout"]) == ("default", "dev", 4, 180)
    assert given["jobTimeout"] == 3600  # it follows the pods no longer than the Job's own wait
    assert given["selector"] == labels(SPEC, "broker")
    assert given["jobUrn"] == deployment.urn(job_resource)  # the URN the message tells users to replace
    assert given["kubeContext"] == "kind-flux"
    dependencies = deployment.options[guard.name]["dependencies"]
    assert deployment.urn(job_resource) not in dependencies  # it must act while the Job is awaited
    config_maps = [r for r in deployment.of_type("kubernetes:core/v1:ConfigMap")]
    assert all(deployment.urn(r) in dependencies for r in config_maps)


def test_the_guard_of_an_elastic_job_comes_after_it() -> None:
    """The Job is not awaited: after it costs nothing, and under `pulumi up --parallel 1` the engine would
    otherwise run the guard first, holding the Job back until the guard gave up waiting for it."""
    deployment = deploy(config(command=None))
    guard, job_resource = deployment.one(GUARD), deployment.one("kubernetes:batch/v1:Job")
    assert deployment.urn(job_resource) in deployment.options[guard.name]["dependencies"]


def test_under_parallel_1_the_guard_of_a_one_shot_job_comes_after_it() -> None:
    """One step at a time, nothing runs beside the Job's await; and a guard the engine ran first (a Job
    replaced) held the Job back until it gave up on it."""
    deployment = deploy(config(), parallel=1)
    guard, job_resource = deployment.one(GUARD), deployment.one("kubernetes:batch/v1:Job")
    assert deployment.urn(job_resource) in deployment.options[guard.name]["dependencies"]


def test_the_guards_revision_follows_the_job() -> None:
    first, again = deploy(config()).one(GUARD), deploy(config()).one(GUARD)
    # (A changed command changes the Job through its ConfigMap's new name: the mocks keep names fixed.)
    changed = deploy(config(image="ghcr.io/flux-framework/flux-minimal:latest")).one(GUARD)
    assert len(first.inputs["revision"]) == 64
    assert first.inputs["revision"] == again.inputs["revision"]
    assert changed.inputs["revision"] != first.inputs["revision"]


def test_the_job_carries_its_guards_revision_and_its_pods_do_not() -> None:
    deployment = deploy(config())
    declared = deployment.one("kubernetes:batch/v1:Job").inputs
    assert declared["metadata"]["annotations"][REVISION] == deployment.one(GUARD).inputs["revision"]
    assert REVISION not in declared["spec"]["template"]["metadata"].get("annotations", {})  # no new pod template


def test_a_queued_job_has_no_guard() -> None:
    kueue = config(jobLabels={"kueue.x-k8s.io/queue-name": "hpc"}, suspend=True)
    assert GUARD not in deploy(kueue).kinds


def test_the_guard_inputs_survive_the_wire() -> None:
    """What the mocks saw went through the same Struct encoding as the engine's: numbers as floats."""
    given = deploy(config()).one(GUARD).inputs
    typed = scheduling.GuardInputs.from_wire(json.loads(json.dumps(given)))
    assert (typed.size, typed.schedule_timeout) == (4, 180)
    assert isinstance(typed.size, int)


def test_a_gang_is_named_in_what_the_guard_says(plugin: ProviderPlugin, api: Cluster) -> None:
    api.add_job(job())
    for rank in range(4):
        api.add_pod(broker_pod(rank, unschedulable("pod group is not ready, 0 Running, 4 minAvailable"), node=None))
    details = grpc_error(lambda: plugin.create(inputs(plugin, gang="coscheduling")))
    held = "(the coscheduling gang scheduler places all 4 at once or none: the cluster has no room for the whole gang)"
    assert held in details
    assert patches(api) == [STOP]
