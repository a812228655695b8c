"""Does a MiniCluster fit the cluster as it is? Pure logic over what flux_minicluster.cluster.admission read:
the namespace's limits (namespace_limits.py) and the nodes' room (placement.py), for the brokers and,
with keeper.enabled, the keeper's pod beside them.

This MiniCluster's own pods are left out, so that a `pulumi up` of a MiniCluster that already runs
does not count it twice. What it cannot see: inter-pod affinity other than onePodPerNode, topology
spread, scoped quotas for more than one pod, volumes' node limits, and room a cluster autoscaler
would add.
"""

from __future__ import annotations

from flux_minicluster.cluster.admission import namespace_limits, placement
from flux_minicluster.cluster.admission.quantities import memory_volumes, pod_resources
from flux_minicluster.cluster.admission.shape import Shape, Snapshot

__all__ = ["Shape", "Snapshot", "problems"]


def problems(shape: Shape, cluster: Snapshot) -> list[str]:
    """Why the MiniCluster would not fit, one line each; none when it fits."""
    admitted = cluster.admitted["spec"] if cluster.admitted is not None else shape.pod_spec
    requests, _ = pod_resources(admitted)
    return [
        *namespace_limits.problems(shape, cluster),
        *placement.problems(shape, cluster, requests, memory_volumes(admitted)),
    ]
