"""Node placement: would the scheduler find room for every broker pod? Schedulable, Ready nodes that
match the pods' nodeSelector and required node affinity and whose taints the pods tolerate; their
allocatable resources and pod slots less what other pods request; the onePodPerNode rule. Pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from flux_minicluster.cluster.admission.quantities import Json, pod_amounts, quantity, show, total
from flux_minicluster.cluster.admission.shape import Shape, Snapshot, own

PODS = "pods"


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


def problems(shape: Shape, cluster: Snapshot, requests: dict[str, Decimal], shared: Decimal = Decimal(0)) -> list[str]:
    """`shared`: what the pod's memory-backed /dev/shm may hold (minicluster:sharedMemory). A node must
    have that much memory for a pod whatever it requests: those pages are the node's, and the scheduler
    does not count them. None where the nodes could not be read (Snapshot.nodes None)."""
    if cluster.nodes is None:
        return []
    from_shared = shared > requests.get("memory", Decimal(0))
    if from_shared:
        requests = {**requests, "memory": shared}
    used, counts = _node_use(shape, cluster.pods)
    nodes = [_node(shape, node, requests, used, counts) for node in cluster.nodes]
    room = sum(node.room for node in nodes)
    keeper_takes = _keeper_takes(shape, cluster.nodes, nodes, requests, used, counts)
    found = [] if keeper_takes is not None else [_no_room_for_keeper(shape, len(cluster.nodes))]
    room -= keeper_takes or 0
    if room >= shape.size:
        return found
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
    if keeper_takes:
        parts.append(f"the keeper's pod takes the room of {keeper_takes} broker{'s' if keeper_takes != 1 else ''}")
    full = Counter(node.short_of for node in usable if node.room == 0)
    if full:
        because = {"memory": " (for its /dev/shm: minicluster:sharedMemory)"} if from_shared else {}
        amounts = [f"{name} {show(name, value)}{because.get(name, '')}" for name, value in sorted(requests.items())]
        each = ", ".join(amounts) or "nothing"
        detail = ", ".join(f"{'pod slots' if name == PODS else name} on {count}" for name, count in full.most_common())
        parts.append(f"each broker {'needs' if from_shared else 'requests'} {each}; no room for one: {detail}")
    return ["; ".join(parts), *found]


def _keeper_takes(
    shape: Shape, raw_nodes: list[Json], nodes: list[_Node], requests: dict[str, Decimal],
    used: dict[str, dict[str, Decimal]], counts: Counter[str],
) -> int | None:  # fmt: skip
    """How many brokers' room the keeper's pod takes where it takes the least (0 without a keeper), or
    None when it fits on no node: the scheduler places it beside the brokers, on any node its own
    nodeSelector and tolerations allow."""
    if shape.keeper is None:
        return 0
    asks = pod_amounts(shape.keeper, "requests")
    taken_room = []
    for raw, node in zip(raw_nodes, nodes, strict=True):
        if not _selected(shape.keeper, raw) or _why_not(shape.keeper, raw) or _room(raw, asks, used, counts)[0] < 1:
            continue
        with_keeper = {**used, node.name: total([used.get(node.name, {}), asks])}
        beside = counts + Counter({node.name: 1})
        taken_room.append(node.room - _node(shape, raw, requests, with_keeper, beside).room)
    return min(taken_room, default=None)


def _no_room_for_keeper(shape: Shape, node_count: int) -> str:
    asks = pod_amounts(shape.keeper or {}, "requests")
    each = ", ".join(f"{name} {show(name, value)}" for name, value in sorted(asks.items())) or "nothing"
    return f"the keeper's pod (requests {each}) fits on none of the cluster's {node_count} nodes"


def _node_use(shape: Shape, pods: list[Json]) -> tuple[dict[str, dict[str, Decimal]], Counter[str]]:
    used: dict[str, dict[str, Decimal]] = {}
    counts: Counter[str] = Counter()
    for pod in pods:
        node = pod.get("spec", {}).get("nodeName")
        if not node or own(shape, pod):
            continue
        taken = used.setdefault(node, {})
        for name, value in pod_amounts(pod["spec"], "requests").items():
            taken[name] = taken.get(name, Decimal(0)) + value
        counts[node] += 1
    return used, counts


def _node(shape: Shape, node: Json, requests: dict[str, Decimal], used: dict[str, dict[str, Decimal]],
          counts: Counter[str]) -> _Node:  # fmt: skip
    name = node["metadata"]["name"]
    matches = _selected(shape.pod_spec, node)
    why_not = _why_not(shape.pod_spec, node)
    if not matches or why_not:
        return _Node(name, matches, False, why_not if matches else "", 0, "")
    room, short = _room(node, requests, used, counts)
    if shape.one_pod_per_node:
        room = min(room, 1)
    return _Node(name, True, True, "", room, short)


def _why_not(pod_spec: Json, node: Json) -> str:
    """Why no pod of this spec goes to the node: cordoned, not Ready or a taint; empty if none."""
    spec = node.get("spec", {})
    if spec.get("unschedulable"):
        return "cordoned"
    if not _ready(node):
        return "not Ready"
    if not _tolerated(pod_spec.get("tolerations") or [], spec.get("taints") or []):
        return "tainted where the pods have no toleration"
    return ""


def _room(node: Json, requests: dict[str, Decimal], used: dict[str, dict[str, Decimal]],
          counts: Counter[str]) -> tuple[int, str]:  # fmt: skip
    """How many pods of `requests` the node has room for, and what runs out first ("pods": slots)."""
    name = node["metadata"]["name"]
    allocatable = {k: quantity(v) for k, v in (node.get("status", {}).get("allocatable") or {}).items()}
    taken = used.get(name, {})
    room, short = int(allocatable.get(PODS, Decimal(110)) - counts[name]), PODS
    for resource, need in requests.items():
        if need > 0:
            fits = int((allocatable.get(resource, Decimal(0)) - taken.get(resource, Decimal(0))) // need)
            if fits < room:
                room, short = fits, resource
    return max(room, 0), short


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
