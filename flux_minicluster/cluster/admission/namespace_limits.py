"""The namespace's limits: LimitRanges and ResourceQuotas. One broker pod goes through the namespace's
real admission (a server-side dry run, flux_minicluster.cluster.admission), which applies LimitRange defaults
and refuses what a LimitRange or a quota refuses; what the dry run cannot say is whether `size` of them
fit the quotas together, so that arithmetic is done here. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from flux_minicluster.cluster.admission.quantities import Json, pod_resources, quantity, show, total
from flux_minicluster.cluster.admission.shape import Shape, Snapshot, own

QUOTA_NAMES = {"cpu": "requests.cpu", "memory": "requests.memory", "pods": "pods", "count/pods": "pods"}


def problems(shape: Shape, cluster: Snapshot) -> list[str]:
    if cluster.admitted is None:
        fix = (
            "minicluster:securityProfile restricted makes every pod satisfy the restricted profile"
            if "violates PodSecurity" in cluster.refusal
            else "minicluster:resources sets the Flux container's requests and limits; each sidecar has its own"
        )
        return [f"namespace {shape.namespace} refuses even one broker pod: {cluster.refusal} ({fix})"]
    per_pod = quota_use(*pod_resources(cluster.admitted["spec"]))
    keeper = quota_use(*pod_resources(shape.keeper)) if shape.keeper is not None else {}
    own_use = total(quota_use(*pod_resources(pod["spec"])) for pod in cluster.pods if own(shape, pod))
    return [problem for quota in cluster.quotas for problem in _headroom(shape, quota, per_pod, keeper, own_use)]


def _headroom(
    shape: Shape, quota: Json, per_pod: Mapping[str, Decimal], keeper: Mapping[str, Decimal],
    own_use: Mapping[str, Decimal],
) -> list[str]:  # fmt: skip
    """`size` brokers, and the keeper's pod if it has one, against what the quota leaves: other pods'
    use, less this MiniCluster's own."""
    if quota.get("spec", {}).get("scopes") or quota.get("spec", {}).get("scopeSelector"):
        return []  # scoped quotas apply to some pods only: the dry run checked one pod against them
    name, used = quota["metadata"]["name"], quota.get("status", {}).get("used") or {}
    found = []
    for resource, hard in (quota.get("spec", {}).get("hard") or {}).items():
        counted = QUOTA_NAMES.get(resource, resource)
        if counted not in per_pod:
            continue
        others = quantity(used.get(resource, 0)) - own_use.get(counted, Decimal(0))
        need = per_pod[counted] * shape.size + keeper.get(counted, Decimal(0))
        if others + need > quantity(hard):
            who = f"{shape.size} brokers and the keeper" if shape.keeper is not None else f"{shape.size} brokers"
            found.append(
                f"ResourceQuota {name} allows {show(counted, quantity(hard))} of {counted} in namespace "
                f"{shape.namespace}; other pods use {show(counted, max(others, Decimal(0)))}, and "
                f"{who} need {show(counted, need)}"
            )
    return found


def quota_use(requests: Mapping[str, Decimal], limits: Mapping[str, Decimal]) -> dict[str, Decimal]:
    use = {f"requests.{name}": value for name, value in requests.items()}
    use |= {f"limits.{name}": value for name, value in limits.items()}
    return {**use, "pods": Decimal(1)}
