"""The keeper's decisions (the keeper pod's keeper.py): the Job's pods in, the lost pods to replace out,
and the pod that replaces one, as the Job controller would make it. Its run on the real control plane:
tests/realengine/test_keeper_on_the_api.py; on the real node: tests/realengine/node/test_keeper.py."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.builders.names import INDEX_LABEL, REPLACES
from tests.pod_modules import keeper

EVICTED = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
NODE_GONE = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC"}


def pod(
    name: str, index: int, phase: str = "Running", stopping: bool = False, condition: Any = None,
    created: str = "2026-11-27T02:00:00Z", replaces: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    metadata: dict[str, Any] = {"name": name, "uid": f"{name}-uid-0123456789", "creationTimestamp": created,
                                "labels": {INDEX_LABEL: str(index)}}  # fmt: skip
    if stopping:
        metadata["deletionTimestamp"] = "2026-11-27T02:05:00Z"
    if replaces is not None:
        metadata["annotations"] = {REPLACES: replaces}
    return {"metadata": metadata, "status": {"phase": phase, "conditions": [condition] if condition else []}}


def lost(pods: list[dict[str, Any]], while_stopping: bool = True) -> list[str]:
    return [p["metadata"]["name"] for p in keeper.to_replace(pods, INDEX_LABEL, REPLACES, while_stopping)]


def test_a_pod_evicted_and_failed_is_replaced() -> None:
    assert lost([pod("c-0-a", 0), pod("c-1-a", 1, "Failed", condition=EVICTED)]) == ["c-1-a"]


def test_a_pod_lost_to_any_disruption_is_replaced_once_it_has_failed() -> None:
    assert lost([pod("c-1-a", 1, "Failed", condition=NODE_GONE)]) == ["c-1-a"]


def test_a_pod_that_failed_without_a_disruption_stays_the_job_controllers() -> None:
    assert lost([pod("c-0-a", 0), pod("c-1-a", 1, "Failed")]) == []


def test_an_index_that_has_a_pod_running_is_not_replaced_again() -> None:
    pods = [pod("c-1-a", 1, "Failed", condition=EVICTED), pod("c-1-b", 1, "Pending", created="2026-11-27T02:06:00Z")]
    assert lost(pods) == []


def test_rank0_with_a_state_volume_is_replaced_as_soon_as_its_node_stops_it() -> None:
    assert lost([pod("c-0-a", 0, stopping=True, condition=EVICTED)]) == ["c-0-a"]


def test_rank0_without_a_state_volume_waits_until_it_has_failed() -> None:
    assert lost([pod("c-0-a", 0, stopping=True, condition=EVICTED)], while_stopping=False) == []


def test_a_stopping_worker_waits_until_it_has_failed() -> None:
    assert lost([pod("c-1-a", 1, stopping=True, condition=EVICTED)]) == []


def test_rank0_stopped_by_no_node_of_its_own_waits_until_it_has_failed() -> None:
    """Its broker may run on where nobody stops it: the lock could hold the new one back for minutes."""
    assert lost([pod("c-0-a", 0, stopping=True, condition=NODE_GONE)]) == []


def test_an_evicted_pod_still_running_is_not_lost_yet() -> None:
    """The Eviction API marks the pod before it deletes it."""
    assert lost([pod("c-0-a", 0, condition=EVICTED)]) == []


def test_only_the_newest_pod_of_an_index_counts() -> None:
    """An eviction long ago whose replacement then failed for another reason: the Job controller's."""
    pods = [pod("c-1-a", 1, "Failed", condition=EVICTED),
            pod("c-1-b", 1, "Failed", created="2026-11-27T02:09:00Z")]  # fmt: skip
    assert lost(pods) == []


def test_of_two_pods_made_in_the_same_second_the_replacement_is_the_newer() -> None:
    pods = [pod("c-1-b", 1, "Failed", replaces="c-1-a"), pod("c-1-a", 1, "Failed", condition=EVICTED)]
    assert lost(pods) == []


JOB: dict[str, Any] = {
    "metadata": {"name": "c", "uid": "job-uid"},
    "spec": {
        "completions": 2, "parallelism": 2,
        "template": {
            "metadata": {"labels": {"job-name": "c", "app": "minicluster"}, "annotations": {"kept": "yes"}},
            "spec": {"subdomain": "c", "initContainers": [{"name": "view"}],
                     "containers": [{"name": "flux", "env": [{"name": "A", "value": "1"}]}]},
        },
    },
    "status": {},
}  # fmt: skip


def with_job(**changes: Any) -> dict[str, Any]:
    return {**JOB, "metadata": {**JOB["metadata"], **changes.pop("metadata", {})},
            "spec": {**JOB["spec"], **changes.pop("spec", {})}, **changes}  # fmt: skip


def test_a_running_job_wants_its_index_back() -> None:
    assert keeper.why_no_pod(JOB, 1) is None


@pytest.mark.parametrize(
    ("job", "index", "why"),
    [
        (with_job(metadata={"deletionTimestamp": "now"}), 0, "the Job is being deleted"),
        (with_job(spec={"suspend": True}), 0, "the Job is suspended"),
        (with_job(status={"conditions": [{"type": "Failed", "status": "True"}]}), 0, "the Job has Failed"),
        (
            with_job(status={"conditions": [{"type": "FailureTarget", "status": "True"}]}),
            0,
            "the Job has FailureTarget",
        ),
        (with_job(spec={"completions": 1, "parallelism": 1}), 1, "the Job has 1 pods now"),
    ],
    ids=["deleted", "suspended", "failed", "failing", "shrunk"],
)
def test_a_job_that_wants_no_pod_says_why(job: dict[str, Any], index: int, why: str) -> None:
    assert keeper.why_no_pod(job, index) == why


def replacement() -> dict[str, Any]:
    evicted = pod("c-1-abcde", 1, "Failed", condition=EVICTED)
    made: dict[str, Any] = keeper.replacement(JOB, evicted, INDEX_LABEL, REPLACES)
    return made


def test_the_replacement_is_named_after_the_lost_pod_so_a_second_try_cannot_make_a_second_pod() -> None:
    assert replacement()["metadata"]["name"] == "c-1-c-1-abcd"


def test_the_replacement_is_the_jobs_own_pod_for_the_index() -> None:
    metadata = replacement()["metadata"]
    assert metadata["labels"] == {"job-name": "c", "app": "minicluster", INDEX_LABEL: "1"}
    assert metadata["annotations"] == {"kept": "yes", INDEX_LABEL: "1", REPLACES: "c-1-abcde"}
    assert metadata["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "Job", "name": "c", "uid": "job-uid",
                                            "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
    assert metadata["finalizers"] == ["batch.kubernetes.io/job-tracking"]


def test_the_replacement_has_the_indexs_hostname_and_every_container_its_index() -> None:
    spec = replacement()["spec"]
    index = {"name": "JOB_COMPLETION_INDEX",
             "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX_LABEL}']"}}}  # fmt: skip
    assert spec["hostname"] == "c-1"
    assert spec["subdomain"] == "c"
    assert spec["initContainers"] == [{"name": "view", "env": [index]}]
    assert spec["containers"] == [{"name": "flux", "env": [{"name": "A", "value": "1"}, index]}]


def test_the_jobs_template_is_left_as_it_was() -> None:
    replacement()
    assert JOB["spec"]["template"]["spec"]["containers"] == [{"name": "flux", "env": [{"name": "A", "value": "1"}]}]


class RefusingApi:
    """The API server as a full quota makes it: every replacement refused (403); the Job as JOB."""

    namespace = "default"

    def __init__(self) -> None:
        self.posts = 0

    def job(self, _name: str) -> dict[str, Any]:
        return JOB

    def request(self, method: str, _path: str, _body: Any = None, **_query: Any) -> dict[str, Any]:
        assert method == "POST"
        self.posts += 1
        raise keeper.ApiError(403, 'pods "c-1" is forbidden: exceeded quota: pods')


def test_a_refused_replacement_is_tried_again_after_a_pause_that_doubles_up_to_a_minute() -> None:
    clock = [1000.0]
    api = RefusingApi()
    kept = keeper.Keeper(api, "c", INDEX_LABEL, REPLACES, True, clock=lambda: clock[0])
    pods = {"c-1-abcde": pod("c-1-abcde", 1, "Failed", condition=EVICTED)}
    waits = []
    for _ in range(7):
        kept.act(pods)
        waits.append(kept.watch_seconds())
        kept.act(pods)  # an event before the pause is over asks nothing
        clock[0] += waits[-1]
    assert waits == [2, 4, 8, 16, 32, 60, 60]
    assert api.posts == 7


def test_without_a_refusal_the_watch_runs_its_whole_length() -> None:
    kept = keeper.Keeper(RefusingApi(), "c", INDEX_LABEL, REPLACES, True)
    kept.act({"c-0-abcde": pod("c-0-abcde", 0)})
    assert kept.watch_seconds() == keeper.WATCH_SECONDS
