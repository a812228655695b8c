"""Does a MiniCluster fit the cluster as it is? Pure logic over what components.cluster.admission read.

It looks at what the scheduler and the admission plugins would: schedulable, Ready nodes that match
the pods' nodeSelector and required node affinity and whose taints the pods tolerate; their
allocatable resources and pod slots less what other pods request; the namespace's ResourceQuotas and
LimitRanges; the onePodPerNode rule. This MiniCluster's own pods are left out, so that a `pulumi up`
of a MiniCluster that already runs does not count it twice. What it cannot see: inter-pod affinity
other than onePodPerNode, topology spread, scoped quotas, volumes' node limits, and room a cluster
autoscaler would add.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

Json = dict[str, Any]
PODS = "pods"
QUOTA_NAMES = {"cpu": "requests.cpu", "memory": "requests.memory", "pods": "pods", "count/pods": "pods"}


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


@dataclass(frozen=True)
class Snapshot:
    nodes: list[Json]
    pods: list[Json]
    """Pods that hold resources: every namespace, phase neither Succeeded nor Failed."""
    quotas: list[Json]
    limit_ranges: list[Json]


def problems(shape: Shape, cluster: Snapshot) -> list[str]:
    """Why the MiniCluster would not fit, one line each; none when it fits."""
    requests, limits = pod_resources(shape.pod_spec, cluster.limit_ranges)
    return [
        *_limit_range_problems(shape, cluster.limit_ranges),
        *_quota_problems(shape, cluster, requests, limits),
        *_node_problems(shape, cluster, requests),
    ]


# -- what one pod asks for --------------------------------------------------------------------------


def pod_resources(pod_spec: Json, limit_ranges: Iterable[Json] = ()) -> tuple[dict[str, Decimal], dict[str, Decimal]]:
    """The pod's effective requests and limits, as the scheduler and quotas count them."""
    defaults = _container_defaults(limit_ranges)
    return pod_amounts(pod_spec, "requests", defaults), pod_amounts(pod_spec, "limits", defaults)


def pod_amounts(
    pod_spec: Json, kind: str, defaults: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Decimal]:
    """Requests or limits of a pod: its containers and native sidecars together, or an init container
    with the sidecars, whichever is more. Containers without a request or limit get the LimitRange's
    defaults, as the LimitRanger admission plugin does, and a limit alone stands for the request."""
    fallback = (defaults or {}).get(kind) or {}

    def of(container: Json) -> dict[str, Decimal]:
        resources = container.get("resources") or {}
        given = dict(resources.get(kind) or {})
        if kind == "requests" and resources.get("limits"):
            given = {**resources["limits"], **given}
        return {name: _quantity(value) for name, value in {**fallback, **given}.items()}

    main = [of(c) for c in pod_spec.get("containers") or []]
    inits = pod_spec.get("initContainers") or []
    if not inits:
        return _sum(main)
    sidecars = [of(c) for c in inits if c.get("restartPolicy") == "Always"]
    starting = [_sum([of(c), *sidecars]) for c in inits if c.get("restartPolicy") != "Always"]
    return _max([_sum([*main, *sidecars]), *starting])


def _container_defaults(limit_ranges: Iterable[Json]) -> dict[str, dict[str, Any]]:
    defaults: dict[str, dict[str, Any]] = {"requests": {}, "limits": {}}
    for item in _container_limits(limit_ranges):
        defaults["limits"].update(item.get("default") or {})
        defaults["requests"].update(item.get("default") or {})  # the API uses a default limit as the request
        defaults["requests"].update(item.get("defaultRequest") or {})
    return defaults


def _container_limits(limit_ranges: Iterable[Json]) -> list[Json]:
    return [
        item for lr in limit_ranges for item in lr.get("spec", {}).get("limits", []) if item.get("type") == "Container"
    ]


def _quantity(value: Any) -> Decimal:
    return _parsed(value) if isinstance(value, str) else Decimal(parse_quantity(value))  # type: ignore[no-untyped-call]


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Decimal:
    """Quantities repeat across a cluster's pods ("500m", "1Gi"): parse each once."""
    return Decimal(parse_quantity(text))  # type: ignore[no-untyped-call]


def _sum(amounts: Iterable[Mapping[str, Decimal]]) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for amount in amounts:
        for name, value in amount.items():
            total[name] = total.get(name, Decimal(0)) + value
    return total


def _max(amounts: Iterable[Mapping[str, Decimal]]) -> dict[str, Decimal]:
    top: dict[str, Decimal] = {}
    for amount in amounts:
        for name, value in amount.items():
            top[name] = max(top.get(name, Decimal(0)), value)
    return top


# -- LimitRanges and quotas -------------------------------------------------------------------------


def _limit_range_problems(shape: Shape, limit_ranges: list[Json]) -> list[str]:
    found = []
    for lr in limit_ranges:
        for item in lr.get("spec", {}).get("limits", []):
            if item.get("type") != "Container":
                continue
            for container in [*shape.pod_spec.get("containers", []), *shape.pod_spec.get("initContainers", [])]:
                asked = container.get("resources", {}).get("limits") or container.get("resources", {}).get("requests")
                for name, most in (item.get("max") or {}).items():
                    if asked and name in asked and _quantity(asked[name]) > _quantity(most):
                        found.append(
                            f"LimitRange {lr['metadata']['name']} allows at most {name} {most} per container, "
                            f"and container {container['name']} asks for {asked[name]}"
                        )
    return found


def _quota_problems(
    shape: Shape, cluster: Snapshot, requests: dict[str, Decimal], limits: dict[str, Decimal]
) -> list[str]:
    found = []
    own_use = _sum(_quota_use(*pod_resources(pod["spec"])) for pod in cluster.pods if _own(shape, pod))
    per_pod = _quota_use(requests, limits)
    for quota in cluster.quotas:
        if quota.get("spec", {}).get("scopes") or quota.get("spec", {}).get("scopeSelector"):
            continue  # scoped quotas apply to some pods only: not checked
        name, used = quota["metadata"]["name"], quota.get("status", {}).get("used") or {}
        for resource, hard in (quota.get("spec", {}).get("hard") or {}).items():
            counted = QUOTA_NAMES.get(resource, resource)
            if counted.startswith(("requests.", "limits.")) and counted not in per_pod and counted != "pods":
                kind, what = counted.split(".", 1)
                found.append(
                    f"ResourceQuota {name} limits {counted}, so the API server refuses pods that do not set it: "
                    f"set minicluster:resources.{kind}.{what} (and for every sidecar)"
                )
                continue
            if counted not in per_pod:
                continue
            others = _quantity(used.get(resource, 0)) - own_use.get(counted, Decimal(0))
            need = per_pod[counted] * shape.size
            if others + need > _quantity(hard):
                found.append(
                    f"ResourceQuota {name} allows {_show(counted, _quantity(hard))} of {counted} in namespace "
                    f"{shape.namespace}; other pods use {_show(counted, max(others, Decimal(0)))}, and "
                    f"{shape.size} brokers need {_show(counted, need)}"
                )
    return found


def _quota_use(requests: Mapping[str, Decimal], limits: Mapping[str, Decimal]) -> dict[str, Decimal]:
    use = {f"requests.{name}": value for name, value in requests.items()}
    use |= {f"limits.{name}": value for name, value in limits.items()}
    return {**use, "pods": Decimal(1)}


# -- nodes --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Node:
    name: str
    matches: bool
    usable: bool
    why_not: str
    """cordoned, not Ready, or has taints the pods do not tolerate (empty when usable or not matching)."""
    room: int
    short_of: str
    """The resource that limits its room ("pods" for slots), or empty."""


def _node_problems(shape: Shape, cluster: Snapshot, requests: dict[str, Decimal]) -> list[str]:
    used, counts = _node_use(shape, cluster.pods)
    nodes = [_node(shape, node, requests, used, counts) for node in cluster.nodes]
    room = sum(node.room for node in nodes)
    if room >= shape.size:
        return []
    matching = [node for node in nodes if node.matches]
    need = f"{shape.size} nodes" if shape.one_pod_per_node else f"room for {shape.size} pods"
    parts = [f"size {shape.size}{' with onePodPerNode' if shape.one_pod_per_node else ''} needs {need}"]
    constraint = _constraint(shape.pod_spec)
    if constraint:
        parts.append(f"{len(matching)} of {len(nodes)} nodes match {constraint}")
    else:
        parts.append(f"the cluster has {len(nodes)} node{'s' if len(nodes) != 1 else ''}")
    for why, count in Counter(node.why_not for node in matching if node.why_not).most_common():
        parts.append(f"{count} of them {'is' if count == 1 else 'are'} {why}")
    usable = [node for node in matching if node.usable]
    if shape.one_pod_per_node:
        parts.append(f"{room} of the {len(usable)} usable can take a broker")
    else:
        nodes_have = "node has" if len(usable) == 1 else "nodes have"
        parts.append(f"the {len(usable)} usable {nodes_have} room for {room}")
    full = Counter(node.short_of for node in usable if node.room == 0)
    if full:
        each = ", ".join(f"{name} {_show(name, value)}" for name, value in sorted(requests.items())) or "nothing"
        detail = ", ".join(f"{'pod slots' if name == PODS else name} on {count}" for name, count in full.most_common())
        parts.append(f"each broker requests {each}; no room for one: {detail}")
    return ["; ".join(parts)]


def _node_use(shape: Shape, pods: list[Json]) -> tuple[dict[str, dict[str, Decimal]], Counter[str]]:
    used: dict[str, dict[str, Decimal]] = {}
    counts: Counter[str] = Counter()
    for pod in pods:
        node = pod.get("spec", {}).get("nodeName")
        if not node or _own(shape, pod):
            continue
        taken = used.setdefault(node, {})
        for name, value in pod_amounts(pod["spec"], "requests").items():
            taken[name] = taken.get(name, Decimal(0)) + value
        counts[node] += 1
    return used, counts


def _node(shape: Shape, node: Json, requests: dict[str, Decimal], used: dict[str, dict[str, Decimal]],
          counts: Counter[str]) -> _Node:  # fmt: skip
    name, spec = node["metadata"]["name"], node.get("spec", {})
    matches = _selected(shape.pod_spec, node)
    why_not = ""
    if spec.get("unschedulable"):
        why_not = "cordoned"
    elif not _ready(node):
        why_not = "not Ready"
    elif not _tolerated(shape.pod_spec.get("tolerations") or [], spec.get("taints") or []):
        why_not = "tainted where the pods have no toleration"
    if not matches or why_not:
        return _Node(name, matches, False, why_not if matches else "", 0, "")
    allocatable = {k: _quantity(v) for k, v in (node.get("status", {}).get("allocatable") or {}).items()}
    taken = used.get(name, {})
    room, short = int(allocatable.get(PODS, Decimal(110)) - counts[name]), PODS
    for resource, need in requests.items():
        if need > 0:
            fits = int((allocatable.get(resource, Decimal(0)) - taken.get(resource, Decimal(0))) // need)
            if fits < room:
                room, short = fits, resource
    room = max(room, 0)
    if shape.one_pod_per_node:
        room = min(room, 1)
    return _Node(name, True, True, "", room, short)


def _ready(node: Json) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _tolerated(tolerations: list[Json], taints: list[Json]) -> bool:
    return all(
        any(_tolerates(toleration, taint) for toleration in tolerations)
        for taint in taints
        if taint.get("effect") in ("NoSchedule", "NoExecute")
    )


def _tolerates(toleration: Json, taint: Json) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")


def _selected(pod_spec: Json, node: Json) -> bool:
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(key) != value for key, value in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    terms = _required_terms(pod_spec)
    return not terms or any(_term_matches(term, labels, node["metadata"]["name"]) for term in terms)


def _required_terms(pod_spec: Json) -> list[Json]:
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return list(required.get("nodeSelectorTerms") or [])


def _term_matches(term: Json, labels: Mapping[str, str], name: str) -> bool:
    fields = {"metadata.name": name}
    return all(_expression(e, labels) for e in term.get("matchExpressions") or []) and all(
        _expression(e, fields) for e in term.get("matchFields") or []
    )


def _expression(expression: Json, labels: Mapping[str, str]) -> bool:
    key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
    value = labels.get(key)
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if value is None or not values:
        return False
    try:
        return int(value) > int(values[0]) if operator == "Gt" else int(value) < int(values[0])
    except ValueError:
        return False


def _constraint(pod_spec: Json) -> str:
    said = []
    if pod_spec.get("nodeSelector"):
        said.append("nodeSelector " + ",".join(f"{k}={v}" for k, v in sorted(pod_spec["nodeSelector"].items())))
    if _required_terms(pod_spec):
        said.append("the required node affinity")
    return " and ".join(said)


def _own(shape: Shape, pod: Json) -> bool:
    metadata = pod.get("metadata", {})
    labels = metadata.get("labels") or {}
    return (
        metadata.get("namespace") == shape.namespace
        and labels.get("app.kubernetes.io/name") == "minicluster"
        and labels.get("app.kubernetes.io/instance") == shape.instance
    )


def _show(resource: str, value: Decimal) -> str:
    """A quantity as people write it: 500m or 4 for cpu, 8Gi for memory."""
    name = resource.split(".", 1)[-1]
    if name == "cpu":
        return f"{int(value * 1000)}m" if value != value.to_integral_value() else str(int(value))
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        for unit, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= size and value % size == 0:
                return f"{int(value // size)}{unit}"
        return str(int(value))
    return str(int(value)) if value == value.to_integral_value() else str(value)
