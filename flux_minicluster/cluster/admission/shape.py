"""What the admission check judges: the broker pods as the Job asks for them, and the cluster as it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]


@dataclass(frozen=True)
class Shape:
    """One broker pod and how many of them: what the scheduler is asked to place."""

    size: int
    pod_spec: Json
    """The broker pod's spec, from the same builder as the Job's pod template."""
    one_pod_per_node: bool
    namespace: str
    instance: str
    """The MiniCluster's name: its own pods carry it in app.kubernetes.io/instance."""
    keeper: Json | None = None
    """The keeper's pod spec (minicluster:keeper.enabled): one more pod of this MiniCluster's, placed
    and counted against the quotas beside the brokers."""


@dataclass(frozen=True)
class Snapshot:
    nodes: list[Json] | None
    """None: the nodes could not be read (no right to list nodes, or pods, at the cluster scope, as a
    user of one namespace has none), so their room is not judged."""
    pods: list[Json]
    """Pods that hold resources: every namespace, phase neither Succeeded nor Failed (the MiniCluster's
    namespace alone when the nodes could not be read)."""
    quotas: list[Json]
    admitted: Json | None
    """One broker pod as the namespace's admission made it (a server-side dry run: LimitRange defaults
    applied), or None when it was refused."""
    refusal: str = ""
    """The API server's own words when it refused that pod (a LimitRange's max, a quota)."""
    unseen: str = ""
    """Why the nodes could not be read (nodes None), in the one wording of a failed request."""


def own(shape: Shape, pod: Json) -> bool:
    metadata = pod.get("metadata", {})
    labels = metadata.get("labels") or {}
    return (
        metadata.get("namespace") == shape.namespace
        and labels.get("app.kubernetes.io/name") == "minicluster"
        and labels.get("app.kubernetes.io/instance") == shape.instance
    )
