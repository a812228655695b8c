"""The keeper (keeper.enabled): replaces a broker pod lost to a disruption at once, as the Job controller
would make it, without the controller's back-off (10 s after each lost pod, doubling for the Job's
whole life: docs/lost-pods.md).

It watches the Job's pods. An index whose newest pod was lost to an eviction, a preemption or a drain
(its DisruptionTarget condition) and that has no other pod running gets a new pod: the Job's pod
template, with what the Job controller adds to each of its pods, named after the lost pod (so a second
try is refused as AlreadyExists, never a second pod). The Job controller takes it as the index's own.
When: once the lost pod has Failed; rank 0 with a state volume (MC_RANK0_WHILE_STOPPING) as soon as it
is told to stop, since the saved instance's lock holds its new broker back until the old one has let go.
A pod that failed any other way stays the Job controller's, with its back-off and backoffLimit.

Configured by MC_* variables (builders/keeper.py); the account's token, CA and namespace are where
Kubernetes mounts them. Standard library only, for an image's older Python.
"""

import json
import math
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its module is beside it

from cluster_api import ApiError, ClusterApi  # type: ignore[import-not-found]

DISRUPTED = "DisruptionTarget"
STOPPED_BY_ITS_NODE = ("EvictionByEvictionAPI", "PreemptionByScheduler")
"""Disruptions whose pod its own kubelet stops (SIGTERM, the hand-over): the state's lock is let go
when its broker ends. Others (a node that went away, a taint) may leave a broker that nobody stops."""
WATCH_SECONDS = 240
"""How long one watch lasts before it is made anew from a fresh list (the API server ends it)."""
RETRY_PAUSE = 2.0
"""Seconds before the list and watch are tried again after the API server failed them, and the least
time between two tries to replace the same pod."""
LONGEST_RETRY_PAUSE = 60.0
"""A replacement the API server keeps refusing (a full quota, a webhook) is tried again after RETRY_PAUSE,
then twice as long each time, up to this: without waiting for another event of the Job's pods."""
ENDED = ("Succeeded", "Failed")
JOB_ENDING = ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet")
"""A Job's conditions once it ends or is about to: it wants no new pod."""


def log(message: str) -> None:
    print(f"minicluster keeper: {message}", file=sys.stderr, flush=True)


def disruption(pod: "dict[str, Any]") -> "str | None":
    """The reason of the pod's DisruptionTarget condition, if it has one."""
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == DISRUPTED and condition.get("status") == "True":
            return str(condition.get("reason") or "")
    return None


def ended(pod: "dict[str, Any]") -> bool:
    return pod.get("status", {}).get("phase") in ENDED


def running_on(pod: "dict[str, Any]") -> bool:
    """Neither ended nor told to stop: the index has a pod."""
    return not ended(pod) and not pod["metadata"].get("deletionTimestamp")


def newest(pods: "list[dict[str, Any]]", replaces: str) -> "dict[str, Any]":
    """The index's newest pod. Creation times have whole seconds: of two in the same second, the one
    that replaces the other is the newer."""
    named = {pod["metadata"]["name"] for pod in pods}

    def order(pod: "dict[str, Any]") -> Any:
        replaced = (pod["metadata"].get("annotations") or {}).get(replaces)
        return pod["metadata"]["creationTimestamp"], replaced in named

    return max(pods, key=order)


def to_replace(
    pods: "list[dict[str, Any]]", index_label: str, replaces: str, rank0_while_stopping: bool
) -> "list[dict[str, Any]]":
    """The lost pods to replace now, one per index at most: the newest pod of an index that has no pod
    running, lost to a disruption, and Failed (rank 0 with a state volume: as soon as it is told to stop,
    by its own node)."""
    by_index: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        index = (pod["metadata"].get("labels") or {}).get(index_label)
        if index is not None:
            by_index.setdefault(index, []).append(pod)
    found = []
    for index, of_index in sorted(by_index.items()):
        if any(running_on(pod) for pod in of_index):
            continue
        lost = newest(of_index, replaces)
        reason = disruption(lost)
        if reason is None:
            continue
        if ended(lost) or (rank0_while_stopping and index == "0" and reason in STOPPED_BY_ITS_NODE):
            found.append(lost)
    return found


def why_no_pod(job: "dict[str, Any]", index: int) -> "str | None":
    """Why the Job wants no pod for `index` now, or None when it does."""
    if job["metadata"].get("deletionTimestamp"):
        return "the Job is being deleted"
    if job["spec"].get("suspend"):
        return "the Job is suspended"
    for condition in job.get("status", {}).get("conditions") or []:
        if condition.get("type") in JOB_ENDING and condition.get("status") == "True":
            return f"the Job has {condition['type']}"
    size = min(job["spec"].get("completions", 1), job["spec"].get("parallelism", 1))
    if index >= size:
        return f"the Job has {size} pods now"
    return None


def replacement(job: "dict[str, Any]", lost: "dict[str, Any]", index_label: str, replaces: str) -> "dict[str, Any]":
    """The pod the Job controller would make for the lost pod's index: the Job's template (not the lost
    pod's spec, which admission may have added to), the index's label and annotation, its hostname,
    JOB_COMPLETION_INDEX in every container, the Job as its controlling owner and the Job's tracking
    finalizer; named after the lost pod."""
    meta, template = job["metadata"], job["spec"]["template"]
    index = lost["metadata"]["labels"][index_label]
    spec = json.loads(json.dumps(template["spec"]))
    spec["hostname"] = f"{meta['name']}-{index}"
    field = {"fieldRef": {"fieldPath": f"metadata.annotations['{index_label}']"}}
    for container in [*spec.get("initContainers", []), *spec["containers"]]:
        container["env"] = [*container.get("env", []), {"name": "JOB_COMPLETION_INDEX", "valueFrom": field}]
    template_meta = template.get("metadata") or {}
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta["uid"],
             "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    metadata = {
        "name": f"{meta['name']}-{index}-{lost['metadata']['uid'][:8]}",
        "labels": dict(template_meta.get("labels") or {}, **{index_label: index}),
        "annotations": dict(template_meta.get("annotations") or {}, **{index_label: index,
                                                                         replaces: lost["metadata"]["name"]}),
        "finalizers": ["batch.kubernetes.io/job-tracking"],
        "ownerReferences": [owner],
    }  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


class Keeper:
    """Follows the Job's pods (a list, then a watch from it, made anew when it ends) and replaces what
    to_replace finds, after a look at the Job (why_no_pod)."""

    def __init__(self, api: ClusterApi, job: str, index_label: str, replaces: str, rank0_while_stopping: bool,
                 clock: "Callable[[], float]" = time.monotonic):  # fmt: skip
        self.api, self.job, self.index_label, self.replaces = api, job, index_label, replaces
        self.rank0_while_stopping, self.clock = rank0_while_stopping, clock
        self.pods_path = f"/api/v1/namespaces/{api.namespace}/pods"
        self.selector = f"job-name={job}"
        self.next_try: dict[str, float] = {}
        """When each lost pod may be tried again, so that a refusal is not asked again at every event."""
        self.refused_pause: dict[str, float] = {}
        """The pause before the next try of each lost pod whose replacement the API server refused."""

    def run(self) -> None:
        log(f"watching the pods of Job {self.job} in {self.api.namespace}")
        while True:
            try:
                listed = self.api.request("GET", self.pods_path, labelSelector=self.selector)
                pods = {pod["metadata"]["name"]: pod for pod in listed["items"]}
                self.act(pods)
                self.follow(pods, listed["metadata"]["resourceVersion"])
            except ApiError as failed:
                log(f"the API server: {failed}; again in {RETRY_PAUSE} s")
                time.sleep(RETRY_PAUSE)

    def follow(self, pods: "dict[str, dict[str, Any]]", version: str) -> None:
        """Keeps `pods` up to date from a watch and acts at each change, until the watch ends: after
        WATCH_SECONDS, when a refused replacement is due again, or at once when a refusal comes earlier
        than that (the fresh list that follows tries it again: no other event may come meanwhile)."""
        due_before = self.next_retry()
        changes = self.api.watch(self.pods_path, self.watch_seconds(), labelSelector=self.selector,
                                 resourceVersion=version)  # fmt: skip
        try:
            for kind, pod in changes:
                if kind == "DELETED":
                    pods.pop(pod["metadata"]["name"], None)
                else:
                    pods[pod["metadata"]["name"]] = pod
                self.act(pods)
                due = self.next_retry()
                if due is not None and (due_before is None or due < due_before):
                    return
        finally:
            changes.close()

    def act(self, pods: "dict[str, dict[str, Any]]") -> None:
        self.next_try = {name: at for name, at in self.next_try.items() if name in pods}
        self.refused_pause = {name: pause for name, pause in self.refused_pause.items() if name in pods}
        for lost in to_replace(list(pods.values()), self.index_label, self.replaces, self.rank0_while_stopping):
            name = lost["metadata"]["name"]
            if self.clock() < self.next_try.get(name, 0.0):
                continue
            refused = self.replace(lost)
            if refused is None:
                self.refused_pause.pop(name, None)
                pause = RETRY_PAUSE
            else:
                pause = min(self.refused_pause.get(name, RETRY_PAUSE / 2) * 2, LONGEST_RETRY_PAUSE)
                self.refused_pause[name] = pause
                log(f"{name} could not be replaced: {refused}; tried again in {pause:g} s")
            self.next_try[name] = self.clock() + pause

    def next_retry(self) -> "float | None":
        """When the first refused replacement is due to be tried again, if any is."""
        due = [self.next_try[name] for name in self.refused_pause if name in self.next_try]
        return min(due, default=None)

    def watch_seconds(self) -> int:
        """WATCH_SECONDS, or less, so that the watch ends (and a fresh list tries again) when the next
        try of a refused replacement is due."""
        due = self.next_retry()
        if due is None:
            return WATCH_SECONDS
        return max(1, min(WATCH_SECONDS, math.ceil(due - self.clock())))

    def replace(self, lost: "dict[str, Any]") -> "ApiError | None":
        """Replaces the lost pod, unless the Job wants no pod there. The API server's refusal (or failure)
        when it did not, for act to try again; None otherwise."""
        name, index = lost["metadata"]["name"], lost["metadata"]["labels"][self.index_label]
        try:
            job = self.api.job(self.job)
            why_not = why_no_pod(job, int(index))
            if why_not is not None:
                log(f"{name} ({disruption(lost)}) is not replaced: {why_not}")
                return None
            made = self.api.request("POST", self.pods_path, replacement(job, lost, self.index_label, self.replaces))
            phase = lost["status"].get("phase")
            log(f"{name} ({disruption(lost)}, {phase}) replaced by {made['metadata']['name']}")
            return None
        except ApiError as failed:
            return None if failed.status == 409 else failed  # 409: made at an earlier try, the watch brings it


def stop_when_told(signum: int, frame: Any) -> None:
    """It keeps nothing of its own (a new keeper lists the pods anew, and a replacement made twice is
    refused as AlreadyExists), so it ends at once. As its container's first process it must say so: the
    kernel shields that process from any signal it has no handler for, and SIGTERM would then wait out
    the pod's grace period for a SIGKILL, holding up `pulumi destroy` and the Deployment's rollouts."""
    log("told to stop")
    sys.exit(0)


def main() -> int:
    signal.signal(signal.SIGTERM, stop_when_told)
    account = os.environ["MC_SERVICE_ACCOUNT_DIR"]
    with open(os.path.join(account, "namespace")) as namespace:
        api = ClusterApi(account, namespace.read().strip())
    keeper = Keeper(api, os.environ["MC_JOB"], os.environ["MC_INDEX_LABEL"], os.environ["MC_REPLACES"],
                    os.environ["MC_RANK0_WHILE_STOPPING"] == "1")  # fmt: skip
    keeper.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
