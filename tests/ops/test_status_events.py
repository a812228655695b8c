"""`minicluster status`'s replaced ranks and the autoscaler's last change, from the namespace's events:
this Job's alone, never those of an earlier Job of the same name (a replaced Job's stay for an hour)."""

from __future__ import annotations

from typing import Any

from flux_minicluster.ops import cli
from tests.kube_api import Cluster, finished, running
from tests.kube_api.samples import BROKER, broker_pod, job
from tests.ops.test_operate import all_running

EARLIER_JOB = "uid-of-the-job-this-one-replaced"


def test_status_says_which_ranks_were_replaced_how_often_and_why(kube_api: Cluster, capsys: Any) -> None:
    all_running(kube_api)
    evicted = broker_pod(0, finished(143, BROKER))
    evicted["metadata"].update(name="dev-0-old11", creationTimestamp="2025-12-31T00:00:00Z")
    disruption = {"reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}
    evicted["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", **disruption}]
    kube_api.add_pod(evicted)
    for name, at in (("dev-2-aaaaa", "2025-12-30T00:00:00Z"), ("dev-2-bbbbb", "2025-12-30T01:00:00Z"),
                     ("dev-2-abcde", "2026-01-01T00:00:00Z")):  # fmt: skip
        kube_api.add_event("default", "dev", "SuccessfulCreate", f"Created pod: {name}", kind="Job", at=at)
    kube_api.add_event("default", "dev-2-aaaaa", "Preempted", "Preempted by default/urgent on node node-1")
    assert cli.main(["status", "--stack", "dev"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "replaced rank 0: 1 time (EvictionByEvictionAPI: Eviction API: evicting)" in said
    assert "replaced rank 2: 2 times (Preempted: Preempted by default/urgent on node node-1; deleted)" in said
    assert "replaced rank 1" not in said


def test_status_takes_no_event_of_a_gone_pods_start_for_why_it_went(kube_api: Cluster, capsys: Any) -> None:
    """Found on the real control plane: a pod gone with no event of its end was said to have gone for
    its last event, the scheduler's "Scheduled"."""
    all_running(kube_api)
    for name, at in (("dev-1-aaaaa", "2025-12-30T00:00:00Z"), ("dev-1-abcde", "2026-01-01T00:00:00Z")):
        kube_api.add_event("default", "dev", "SuccessfulCreate", f"Created pod: {name}", kind="Job", at=at)
    kube_api.add_event("default", "dev-1-aaaaa", "Scheduled", "Successfully assigned default/dev-1-aaaaa to node-1")
    kube_api.add_event("default", "dev-1-aaaaa", "Started", "Started container flux-broker")
    assert cli.main(["status", "--stack", "dev"]) == 0
    assert "replaced rank 1: 1 time (deleted)" in " ".join(capsys.readouterr().out.split())


def test_status_takes_no_pod_of_an_earlier_job_of_the_same_name_for_a_replaced_rank(
    kube_api: Cluster, capsys: Any
) -> None:
    """Found on the real engines: after the Job was replaced (`pulumi up --refresh` once it had been
    deleted), every rank was said to be replaced once, for the old Job's pods that the kubelet stopped."""
    all_running(kube_api)
    for rank in range(4):
        old = f"dev-{rank}-old11"
        kube_api.add_event("default", "dev", "SuccessfulCreate", f"Created pod: {old}", kind="Job",
                           at="2025-12-31T00:00:00Z", uid=EARLIER_JOB)  # fmt: skip
        kube_api.add_event("default", old, "Killing", "Stopping container flux-broker")
    assert cli.main(["status", "--stack", "dev"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "pods 4 Running" in said
    assert "replaced" not in said


def test_status_takes_no_change_of_an_earlier_jobs_autoscaler_for_this_ones(kube_api: Cluster, capsys: Any) -> None:
    kube_api.add_job({**job(), "metadata": {"name": "autoscale", "namespace": "default", "uid": "autoscale-uid"}})
    for rank in range(4):
        kube_api.add_pod(broker_pod(rank, running(BROKER), owner="autoscale"))
    kube_api.add_event("default", "autoscale", "Grew", "grew from 1 to 4 brokers: 3 queued jobs need 3 nodes, 0 free",
                       kind="Job", uid=EARLIER_JOB)  # fmt: skip
    assert cli.main(["status", "--stack", "autoscale"]) == 0
    assert "autoscaler no change yet" in " ".join(capsys.readouterr().out.split())
