"""Objects as the API server returns them, for the tests that put them in the stand-in: Nodes, and the
dev stack's Job and broker pods (the real dev stack: 4 brokers, a command)."""

from __future__ import annotations

from typing import Any

from flux_minicluster.builders import names
from flux_minicluster.config.stack_file import load, stack_path

Json = dict[str, Any]
BROKER = names.BROKER_CONTAINER
DEV, _ = load(stack_path("dev"))


def node(name: str, cpu: str = "8", labels: Json | None = None, taints: list[Json] | None = None,
         cordoned: bool = False, ready: bool = True, pods: str = "110") -> Json:  # fmt: skip
    spec: Json = {"unschedulable": True} if cordoned else {}
    if taints:
        spec["taints"] = taints
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": pods},
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }  # fmt: skip


FOUR = [node(f"node-{i}") for i in range(1, 5)]


JOB_REVISION = "a" * 64
"""The dev Job's revision (its annotation, as the program declares it), for its scheduling guard."""


def job(condition: str | None = None, reason: str | None = None, revision: str = JOB_REVISION) -> dict[str, Any]:
    conditions = [{"type": condition, "status": "True", "reason": reason}] if condition else []
    metadata = {"name": "dev", "namespace": "default", "uid": "dev-uid", "annotations": {names.REVISION: revision}}
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
        "spec": {"completions": 4, "parallelism": 4, "completionMode": "Indexed",
                 "template": {"spec": {"containers": []}}},
        "status": {"conditions": conditions, "completedIndexes": "0-3" if condition == "Complete" else ""},
    }  # fmt: skip


def broker_pod(rank: int, status: dict[str, Any], node: str | None = "node-1", owner: str = "dev") -> dict[str, Any]:
    pod_labels = {
        **names.labels(DEV.model_copy(update={"name": owner}), "broker"),
        names.INDEX_LABEL: str(rank),
        "job-name": owner,
        names.JOB_UID_LABEL: f"{owner}-uid",
    }
    spec: dict[str, Any] = {"containers": [{"name": BROKER, "image": DEV.image}]}
    if node:
        spec["nodeName"] = node
    metadata = {"name": f"{owner}-{rank}-abcde", "namespace": "default", "labels": pod_labels}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}
