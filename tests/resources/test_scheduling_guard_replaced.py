"""The scheduling guard across Jobs of one name (issue 12): a replacement's guard guards the new Job
alone, whatever the old one left (its pods, its stop, its events); and when it is made anew. Driven over
gRPC as the engine drives it, with the real client in the plugin process against the API stand-in."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from flux_minicluster.builders.names import labels
from flux_minicluster.cluster import kube
from flux_minicluster.cluster import scheduling as guarding
from tests.kube_api import Cluster, StandIn, running, unschedulable
from tests.kube_api.samples import BROKER, JOB_REVISION, broker_pod, job
from tests.provider_plugin import DIFF_NONE, DIFF_SOME, ProviderPlugin, grpc_error
from tests.resources.test_scheduling_guard import FULL, SPEC, STOP, URN, inputs, patches, plugin  # noqa: F401 -- its fixture


def test_the_pods_of_the_job_a_replacement_deletes_are_not_the_new_jobs(plugin: ProviderPlugin, api: Cluster) -> None:
    """The guard's replacement starts while the old Job (another revision) and its pods, scheduled long
    ago, are still there: it waits for its own Job, and guards that Job's pods alone."""
    api.add_job(job(revision="b" * 64))
    for rank in range(4):
        api.add_pod(broker_pod(rank, running(BROKER)))

    def replaced() -> None:  # once the guard watches the old pods
        while not api.watches:
            time.sleep(0.01)
        for rank in range(4):
            api.delete_pod("default", f"dev-{rank}-abcde")
        api.add_job(job())
        for rank in range(4):
            api.add_pod(broker_pod(rank, unschedulable(FULL), node=None))

    threading.Thread(target=replaced, daemon=True).start()
    details = grpc_error(lambda: plugin.create(inputs(plugin)))
    assert f"(minicluster:scheduleTimeout): Unschedulable: {FULL}" in details
    assert patches(api) == [STOP]


def guard_here(api_server: StandIn, monkeypatch: pytest.MonkeyPatch) -> Callable[[], str]:
    """The guard called in this process (its errors as raised), its wait for a Job cut to 1 s."""
    monkeypatch.setenv("KUBECONFIG", str(api_server.cluster.kubeconfig))
    monkeypatch.setattr(guarding, "JOB_CREATION", 1.0)
    selector = labels(SPEC, "broker")
    return lambda: guarding.guard(kube.api_client(None), "default", "dev", selector, 4, 1, URN, JOB_REVISION)


def test_a_job_that_never_comes_ends_the_guard_with_why(
    api: Cluster, api_server: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its create failed, or `pulumi up` was cancelled: the engine waits for the guard all the same."""
    with pytest.raises(guarding.JobNotCreated) as raised:
        guard_here(api_server, monkeypatch)()
    assert str(raised.value).startswith("the Job default/dev of this update was not created (its own error says why")
    assert patches(api) == []


def stopped_job(deleting: bool) -> dict[str, Any]:
    """The Job a guard stopped (of the guard's revision), as a `pulumi up --replace` of it finds it."""
    stopped = job("Failed", "DeadlineExceeded")
    annotations = {**stopped["metadata"]["annotations"], **STOP["metadata"]["annotations"]}
    stopped["metadata"] = {**stopped["metadata"], "uid": "stopped-uid", "annotations": annotations}
    stopped["spec"]["activeDeadlineSeconds"] = 1
    if deleting:
        stopped["metadata"]["deletionTimestamp"] = "2026-11-29T12:00:00Z"
    return stopped


def test_the_replacement_of_a_job_a_guard_stopped_is_guarded(plugin: ProviderPlugin, api: Cluster) -> None:
    """`pulumi up --replace` after a fix outside the stack config: the new Job has the stopped one's
    revision, and the guard starts while the stopped one is still being deleted."""
    api.add_job(stopped_job(deleting=True))

    def replaced() -> None:  # once the guard has looked at the stopped Job
        while not api.reads("/jobs/dev"):
            time.sleep(0.01)
        api.add_job(job())
        for rank in range(4):
            api.add_pod(broker_pod(rank, unschedulable(FULL), node=None))

    threading.Thread(target=replaced, daemon=True).start()
    details = grpc_error(lambda: plugin.create(inputs(plugin)))
    assert f"(minicluster:scheduleTimeout): Unschedulable: {FULL}" in details  # not "the Job finished"
    assert patches(api) == [STOP]


def test_a_job_a_guard_stopped_that_this_update_keeps_ends_the_guard_with_the_command_that_replaces_it(
    api: Cluster, api_server: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `pulumi up` without --replace after the stop: the Job's own update fails with DeadlineExceeded."""
    api.add_job(stopped_job(deleting=False))
    with pytest.raises(guarding.StoppedBefore) as raised:
        guard_here(api_server, monkeypatch)()
    assert str(raised.value) == (
        "the Job default/dev is the one its scheduling guard stopped in an earlier `pulumi up` (its pods could not "
        "be scheduled for 1s (minicluster:scheduleTimeout)), and this update does not replace it. After a fix "
        f"outside the stack config (room added to the cluster), run: pulumi up --replace '{URN}'"
    )
    assert patches(api) == []


def test_a_new_job_gets_a_new_guard_and_nothing_else_does(plugin: ProviderPlugin) -> None:
    olds = {**inputs(plugin), "outcome": "all 4 pods of the Job default/dev were scheduled"}
    assert plugin.diff("id", olds, inputs(plugin)).changes == DIFF_NONE
    new_job = plugin.diff("id", olds, inputs(plugin, revision="b" * 64))
    assert (new_job.changes, list(new_job.replaces)) == (DIFF_SOME, ["revision"])
    other = plugin.diff("id", olds, inputs(plugin, scheduleTimeout=300))
    assert (other.changes, list(other.replaces)) == (DIFF_SOME, [])
    assert plugin.update("id", olds, inputs(plugin, scheduleTimeout=300))["outcome"] == olds["outcome"]


def test_a_guard_made_before_it_had_a_job_timeout_sees_no_change_when_given_one(plugin: ProviderPlugin) -> None:
    """jobTimeout matters only when the guard follows a new Job's pods: an older stack's guard, without
    it in its state, is not updated for it."""
    assert plugin.diff("id", inputs(plugin), inputs(plugin, jobTimeout=3600)).changes == DIFF_NONE


def test_an_earlier_jobs_failure_to_create_pods_does_not_stop_the_new_job(plugin: ProviderPlugin, api: Cluster) -> None:
    """Kubernetes keeps a Job's events for an hour after the Job is gone: the quota that stopped the old
    Job (the same name, another uid) says nothing of the new one, whose pods come once it is raised."""
    over_quota = 'pods "dev-0-aaaaa" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=3'
    api.add_event("default", "dev", "FailedCreate", over_quota, kind="Job", uid="replaced-job-uid")
    api.add_job(job())

    def created_late() -> None:  # past the schedule timeout after the guard's first look at the events
        while not api.reads("/events"):
            time.sleep(0.01)
        time.sleep(1.5)
        for rank in range(4):
            api.add_pod(broker_pod(rank, running(BROKER)))

    threading.Thread(target=created_late, daemon=True).start()
    _, outs = plugin.create(inputs(plugin))
    assert outs["outcome"] == "all 4 pods of the Job default/dev started"
    assert patches(api) == []


def test_a_refresh_keeps_the_guard_of_a_job_that_is_there(plugin: ProviderPlugin, api: Cluster) -> None:
    api.add_job(job())
    olds = {**inputs(plugin), "outcome": "the Job default/dev finished"}
    assert plugin.read("default/dev/aaaaaaaaaaaa", olds) == ("default/dev/aaaaaaaaaaaa", olds)


def test_a_refresh_finds_the_guard_gone_with_its_job(plugin: ProviderPlugin, api: Cluster) -> None:
    """A Job deleted outside Pulumi: the refresh drops both, and `pulumi up` makes a guarded Job again."""
    resource_id, _ = plugin.read("default/dev/aaaaaaaaaaaa", inputs(plugin))
    assert resource_id == ""


def test_a_refresh_that_cannot_read_the_job_fails_with_why(plugin: ProviderPlugin, api: Cluster) -> None:
    api.fail("GET", "/jobs/dev", 403, 'jobs.batch "dev" is forbidden: User "dev" cannot get resource "jobs"')
    details = grpc_error(lambda: plugin.read("default/dev/aaaaaaaaaaaa", inputs(plugin)))
    assert "reading the guarded Job" in details and "forbidden" in details
