"""Gang scheduling (scheduler.gang): the PodGroup that makes the brokers one gang, and the marks its
scheduler finds the pods by. Pure; the PodGroup's name is a parameter (an Output in Pulumi), so the Job
follows the PodGroup in the graph."""

from __future__ import annotations

from typing import Any

from flux_minicluster.config.spec import MiniClusterSpec

Manifest = dict[str, Any]
API_VERSIONS = {"coscheduling": "scheduling.x-k8s.io/v1alpha1", "volcano": "scheduling.volcano.sh/v1beta1"}
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
"""scheduler-plugins' Coscheduling finds a pod's PodGroup by this label."""
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
"""Volcano finds a pod's PodGroup by this annotation."""


def pod_group_spec(spec: MiniClusterSpec) -> Manifest:
    """minMember: every broker of the current size (a resize updates it, before the Job grows)."""
    assert spec.scheduler is not None
    group: Manifest = {"minMember": spec.size}
    if spec.scheduler.gang == "coscheduling":  # how long the gang's first pods wait for the rest at once
        group["scheduleTimeoutSeconds"] = spec.schedule_timeout
    elif spec.scheduler.queue is not None:
        group["queue"] = spec.scheduler.queue
    return group


def mark(spec: MiniClusterSpec, metadata: Manifest, pod_group: Any) -> None:
    """A broker pod's metadata, marked as a member of the PodGroup named `pod_group`."""
    if spec.scheduler is None:
        return
    if spec.scheduler.gang == "coscheduling":
        metadata["labels"][COSCHEDULING_LABEL] = pod_group
    else:
        metadata.setdefault("annotations", {})[VOLCANO_ANNOTATION] = pod_group
