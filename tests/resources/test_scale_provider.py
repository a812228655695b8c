"""The Scale resource (issue 11), driven over gRPC as the engine drives it, with the real client in the
plugin process against the API stand-in. Where the resource execs resize.sh in rank 0, the stand-in's
exec runs it in rank 0 of a persistent MiniCluster on real Flux (tests/kubelet), as the kubelet would."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from flux_minicluster.builders.names import labels
from flux_minicluster.cluster import api_calls
from flux_minicluster.config import paths
from flux_minicluster.resources import scale
from tests.kube_api import Cluster, StandIn, ready, running, unschedulable
from tests.kube_api.samples import BROKER, DEV, broker_pod, job
from tests.kubelet.pod import Pod, wait_until
from tests.kubelet.pods import Kubelet
from tests.provider_plugin import DIFF_NONE, DIFF_SOME, ProviderPlugin, grpc_error, served
from tests.realflux.test_real_resize import drained

SCALE = "pulumi-python:dynamic/minicluster:Scale"
FULL = "0/3 nodes are available: 3 Insufficient cpu."


@pytest.fixture(scope="module")
def plugin(api_server: StandIn) -> Iterator[ProviderPlugin]:
    yield from served(scale.ScaleProvider(), SCALE, api_server.cluster.kubeconfig)


class Running:
    """A MiniCluster of `size` ready brokers in the stand-in; its Job controller makes pods as told.
    With `rank0` (real_rank0), exec into rank 0 runs there; without it, there is nothing to exec into."""

    def __init__(self, api: Cluster, size: int, new_pods: Any = ready, rank0: Pod | None = None):
        self.api, self.rank0 = api, rank0
        self.execs: list[list[str]] = []
        api.add_job({**job(), "spec": {**job()["spec"], "completions": size, "parallelism": size}})
        api.config_maps[("default", "dev-scale-x1")] = {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dev-scale-x1", "namespace": "default"},
            "data": {"size": str(size), "quorum": str(size)},
        }  # fmt: skip
        for rank in range(size):
            api.add_pod(broker_pod(rank, ready(BROKER)))

        def controller(patched: dict[str, Any]) -> None:
            wanted = patched["spec"]["completions"]
            for (namespace, name), pod in list(api.pods.items()):
                if int(pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]) >= wanted:
                    api.delete_pod(namespace, name)
            have = {int(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]) for p in api.pods.values()}
            for rank in set(range(wanted)) - have:
                status = new_pods(BROKER) if new_pods is ready else new_pods
                api._store_pod(broker_pod(rank, status, node="node-1" if new_pods is ready else None), "ADDED")

        api.job_controller = controller
        api.exec_handler = self.run_in_rank0

    def run_in_rank0(self, pod: dict[str, Any], command: list[str]) -> tuple[str, str, int | None]:
        self.execs.append(command)
        assert command[:2] == ["/bin/bash", paths.RESIZE]
        assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "0"
        assert self.rank0 is not None, "this test's cluster has no rank 0 to exec into"
        done = self.rank0.exec(*command, timeout=60)
        return done.stdout, done.stderr, done.returncode

    def drained(self) -> dict[str, str]:
        assert self.rank0 is not None
        return drained(self.rank0)

    def job_on(self, ranks: str, nodes: int, seconds: str = "inf") -> str:
        """A job running on `ranks` of the real instance."""
        assert self.rank0 is not None
        job_id = self.rank0.flux("submit", f"-N{nodes}", f"--requires=rank:{ranks}", "sleep", seconds).strip()
        wait_until(lambda: self.rank0 is not None and self.rank0.flux("jobs", "-no", "{status_abbrev}", job_id).strip()
                   == "R", f"job {job_id} to run", 10)  # fmt: skip
        return job_id

    @property
    def job_size(self) -> tuple[int, int]:
        spec = self.api.jobs[("default", "dev")]["spec"]
        return spec["completions"], spec["parallelism"]

    @property
    def config_data(self) -> dict[str, str]:
        return self.api.config_maps[("default", "dev-scale-x1")]["data"]  # type: ignore[no-any-return]

    def patches(self) -> list[str]:
        return [path.rsplit("/", 2)[-2] for path, _ in self.api.field_managers]


def real_rank0(minicluster: Any, size: int) -> Pod:
    """Rank 0 of a persistent MiniCluster of `size` brokers on real Flux, which may grow to 8."""
    cluster: Kubelet = minicluster(command=None, size=size, maxSize=8)
    pods = cluster.start_all_ready()
    return pods[0]


def inputs(plugin: ProviderPlugin, **overrides: Any) -> dict[str, Any]:
    given = {
        "namespace": "default", "job": "dev", "jobUid": "uid-1", "scaleConfig": "dev-scale-x1",
        "selector": labels(DEV, "broker"), "size": 4, "maxSize": 8, "shrinkPolicy": "wait", "shrinkTimeout": 600,
        "jobTimeout": 60, "scheduleTimeout": 1,
    }  # fmt: skip
    return plugin.with_provider({**given, **overrides})


def test_create_waits_for_the_brokers_and_changes_nothing(plugin: ProviderPlugin, api: Cluster) -> None:
    cluster = Running(api, 4)
    resource_id, outs = plugin.create(inputs(plugin))
    assert resource_id == "default/dev"
    assert outs["outcome"] == "all 4 brokers are ready"
    assert cluster.execs == [] and cluster.job_size == (4, 4)
    assert cluster.patches() == ["configmaps"]  # the scale data, written as it already was
    assert cluster.config_data == {"size": "4", "quorum": "4"}


def test_create_returns_as_soon_as_the_last_broker_is_ready(plugin: ProviderPlugin, api: Cluster) -> None:
    """Woken by the pods' changes (a watch), not by a poll: one list of the pods, the watch's own, and the
    watch on them; it returns only once the brokers have joined."""
    Running(api, 4, new_pods=running(BROKER))
    for (namespace, name), pod in list(api.pods.items()):  # started, not yet ready: their brokers join
        api.delete_pod(namespace, name)
        api.add_pod({**pod, "status": running(BROKER)})

    def brokers_join() -> None:  # 0.3 s after the resource first looks at the pods
        while not any(method == "GET" and path.endswith("/pods") for method, path, _ in list(api.requests)):
            time.sleep(0.01)
        time.sleep(0.3)
        for rank in range(4):
            with api.lock:
                pod = api.pods[("default", f"dev-{rank}-abcde")]
                pod["status"] = ready(BROKER)
                api._record("MODIFIED", pod)
        joined.append(time.monotonic())

    joined: list[float] = []
    threading.Thread(target=brokers_join, daemon=True).start()
    _, outs = plugin.create(inputs(plugin))
    assert joined, "it returned before the brokers joined"
    assert outs["outcome"] == "all 4 brokers are ready"
    assert (api.reads("/pods"), api.watches) == (1, [api_calls.pods("default")])


@pytest.mark.realflux
def test_a_grow_undrains_writes_the_size_then_scales_the_job_and_waits(
    plugin: ProviderPlugin, api: Cluster, minicluster: Any
) -> None:
    cluster = Running(api, 4, rank0=real_rank0(minicluster, 4))
    cluster.rank0.flux("resource", "drain", "4-5", "minicluster: shrinking to 4 brokers")  # type: ignore[union-attr]
    outs = plugin.update("default/dev", inputs(plugin), inputs(plugin, size=6))
    assert outs["outcome"].splitlines() == [
        "growing from 4 to 6 brokers: undraining ranks 4-5, drained when the cluster shrank",
        "all 6 brokers are ready",
    ]
    assert cluster.execs == [["/bin/bash", "/etc/minicluster/run/resize.sh", "4", "6", "wait", "600"]]
    assert cluster.drained() == {}
    assert cluster.patches() == ["configmaps", "jobs"]  # the new pods read the new size
    assert cluster.job_size == (6, 6)
    assert cluster.config_data == {"size": "6", "quorum": "6"}
    assert {manager for _, manager in api.field_managers} == {"minicluster-scale"}
    assert "minicluster[rank 0]: growing from 4 to 6" in cluster.rank0.log  # type: ignore[union-attr]


@pytest.mark.realflux
def test_a_shrink_waits_for_the_work_on_the_ranks_that_go_then_scales_down(
    plugin: ProviderPlugin, api: Cluster, minicluster: Any
) -> None:
    cluster = Running(api, 6, rank0=real_rank0(minicluster, 6))
    long = cluster.job_on("3-5", 3, seconds="3")
    outs = plugin.update("default/dev", inputs(plugin, size=6), inputs(plugin, size=4))
    assert outs["outcome"].splitlines() == [
        "shrinking from 6 to 4 brokers: draining ranks 4-5, so that no new work starts there",
        "waiting up to 600s for the jobs running on ranks 4-5 to finish (shrinkPolicy wait): " + long,
        "the jobs on ranks 4-5 have ended: the shrink goes ahead",
        "all 4 brokers are ready",
    ]
    assert cluster.job_size == (4, 4)
    assert cluster.config_data == {"size": "4", "quorum": "4"}
    assert sorted(pod["metadata"]["name"] for pod in api.pods.values()) == [f"dev-{r}-abcde" for r in range(4)]


@pytest.mark.realflux
def test_a_shrink_called_off_changes_nothing_and_says_which_jobs_run(
    plugin: ProviderPlugin, api: Cluster, minicluster: Any
) -> None:
    cluster = Running(api, 6, rank0=real_rank0(minicluster, 6))
    stuck = cluster.job_on("5", 1)
    details = grpc_error(
        lambda: plugin.update("default/dev", inputs(plugin, size=6), inputs(plugin, size=4, shrinkTimeout=1))
    )
    assert f"the shrink to 4 brokers is called off: after 1s these jobs still run on ranks 4-5: {stuck}" in details
    assert "Nothing changed: the cluster stays at 6 brokers" in details
    assert "set minicluster:shrinkPolicy to cancel" in details
    assert cluster.patches() == [] and cluster.job_size == (6, 6)
    assert cluster.drained() == {}


@pytest.mark.realflux
def test_with_policy_cancel_the_shrink_cancels_the_jobs_and_says_so(
    plugin: ProviderPlugin, api: Cluster, minicluster: Any
) -> None:
    rank0 = real_rank0(minicluster, 6)
    cluster = Running(api, 6, rank0=rank0)
    gone = cluster.job_on("4-5", 2)
    outs = plugin.update("default/dev", inputs(plugin, size=6), inputs(plugin, size=5, shrinkPolicy="cancel"))
    assert f"cancelling the jobs running on ranks 5 (shrinkPolicy cancel): {gone}" in outs["outcome"]
    assert "minicluster: the cluster shrank to 5 brokers" in rank0.flux("job", "eventlog", gone)
    assert cluster.job_size == (5, 5)


@pytest.mark.realflux
def test_a_grow_whose_pods_cannot_be_scheduled_is_rolled_back(
    plugin: ProviderPlugin, api: Cluster, minicluster: Any
) -> None:
    cluster = Running(api, 4, new_pods=unschedulable(FULL), rank0=real_rank0(minicluster, 4))
    details = grpc_error(lambda: plugin.update("default/dev", inputs(plugin), inputs(plugin, size=6)))
    assert f"the new pods could not be scheduled for 1s (minicluster:scheduleTimeout): Unschedulable: {FULL}" in details
    assert "The grow was rolled back: the cluster stays at 4 brokers (rank 4-5 not added)" in details
    assert cluster.job_size == (4, 4)
    assert cluster.config_data == {"size": "4", "quorum": "4"}
    assert len(api.pods) == 4


def test_without_a_running_rank0_a_shrink_has_nothing_to_drain(plugin: ProviderPlugin, api: Cluster) -> None:
    cluster = Running(api, 6)
    api.delete_pod("default", "dev-0-abcde")
    api.job_controller = None
    details = grpc_error(
        lambda: plugin.update("default/dev", inputs(plugin, size=6), inputs(plugin, size=4, jobTimeout=1))
    )
    assert cluster.execs == [] and cluster.job_size == (4, 4)
    assert (
        "after 1s (minicluster:jobTimeout) 3 of 4 brokers are ready; rank 0: no pod yet; ranks 4, 5 are still going"
    ) in details


def test_a_new_size_for_a_finished_job_fails_and_says_how_to_start_it_anew(
    plugin: ProviderPlugin, api: Cluster
) -> None:
    """After `flux shutdown` the Job is complete: a resize was said to succeed, and nothing ran."""
    cluster = Running(api, 4)
    api.jobs[("default", "dev")]["status"] = job("Complete")["status"]
    details = grpc_error(lambda: plugin.update("default/dev", inputs(plugin), inputs(plugin, size=6)))
    assert (
        "the Job has completed, so its instance no longer runs (`flux shutdown`, or rank 0's program ended): there "
        "is no cluster to resize to 6 brokers. To start it anew at that size, set minicluster:rerun to a new "
        "number (`pulumi config set minicluster:rerun N`); a stateVolume keeps its queue"
    ) in details
    assert cluster.job_size == (4, 4)
    # The size asked, for the brokers of the Job that `rerun` makes: each reads its quorum there as it
    # starts (left at 4, the new Job's rank 0 waited for ranks 2 and 3, on the real engines).
    assert cluster.config_data == {"size": "6", "quorum": "6"}


def test_a_finished_job_at_the_size_asked_is_left_as_it_is(plugin: ProviderPlugin, api: Cluster) -> None:
    """A launcher whose command ended before the Scale looked at its new Job: nothing to do, no failure."""
    cluster = Running(api, 4)
    api.jobs[("default", "dev")]["status"] = job("Complete")["status"]
    outs = plugin.update("default/dev", inputs(plugin), inputs(plugin, jobUid="uid-2"))
    assert outs["outcome"] == "the Job has completed: there is no running cluster to resize"
    assert cluster.job_size == (4, 4)


def test_a_size_change_is_an_update_and_a_new_job_name_a_replacement(plugin: ProviderPlugin) -> None:
    olds = inputs(plugin)
    resized = plugin.diff("default/dev", olds, inputs(plugin, size=6))
    assert (resized.changes, list(resized.replaces)) == (DIFF_SOME, [])
    replaced_job = plugin.diff("default/dev", olds, inputs(plugin, jobUid="uid-2"))
    assert (replaced_job.changes, list(replaced_job.replaces)) == (DIFF_SOME, [])
    renamed = plugin.diff("default/dev", olds, inputs(plugin, job="other"))
    assert list(renamed.replaces) == ["job"]


def test_the_same_inputs_again_are_no_change_though_the_program_leaves_autoscale_out(
    plugin: ProviderPlugin, api: Cluster
) -> None:
    """Create writes autoscale's default into the state, and the program sends autoscale only when it is
    on: each `pulumi up` of an elastic stack saw a change, and wrote the scale ConfigMap again."""
    Running(api, 4)
    resource_id, outs = plugin.create(inputs(plugin))
    again = plugin.diff(resource_id, outs, inputs(plugin))
    assert (again.changes, list(again.replaces)) == (DIFF_NONE, [])


def test_refresh_reads_the_size_the_job_has(plugin: ProviderPlugin, api: Cluster) -> None:
    Running(api, 5)  # scaled outside Pulumi (kubectl)
    _, props = plugin.read("default/dev", inputs(plugin))
    assert props["size"] == 5
    assert json.dumps(props).count("uid-1") == 1


@pytest.mark.realflux
def test_a_size_the_api_server_refuses_leaves_the_cluster_as_it_was(
    plugin: ProviderPlugin, api: Cluster, minicluster: Any
) -> None:
    """An API server without elastic Indexed Jobs (before 1.27) refuses to change completions."""
    cluster = Running(api, 6, rank0=real_rank0(minicluster, 6))
    immutable = 'Job.batch "dev" is invalid: spec.completions: Invalid value: 4: field is immutable'
    api.fail("PATCH", "/jobs/dev$", 422, immutable)
    details = grpc_error(lambda: plugin.update("default/dev", inputs(plugin, size=6), inputs(plugin, size=4)))
    assert f"the new size could not be set (422: {immutable}); resizing a Job in place needs Kubernetes 1.27" in details
    assert "The cluster stays at 6 brokers" in details
    assert cluster.job_size == (6, 6)
    assert cluster.config_data == {"size": "6", "quorum": "6"}
    assert cluster.drained() == {}  # drained for the shrink, then undrained
    assert [command[2:4] for command in cluster.execs] == [["6", "4"], ["4", "6"]]
