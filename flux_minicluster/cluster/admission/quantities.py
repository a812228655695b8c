"""Kubernetes quantities, and what a pod asks for as the scheduler and the quota admission count it."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

Json = dict[str, Any]


def pod_resources(pod_spec: Json) -> tuple[dict[str, Decimal], dict[str, Decimal]]:
    """The pod's effective requests and limits, as the scheduler and quotas count them."""
    return pod_amounts(pod_spec, "requests"), pod_amounts(pod_spec, "limits")


def pod_amounts(pod_spec: Json, kind: str) -> dict[str, Decimal]:
    """Requests or limits of a pod: its containers and native sidecars together, or an init container
    with the sidecars, whichever is more. A limit alone stands for the request, as the API defaults it."""

    def of(container: Json) -> dict[str, Decimal]:
        resources = container.get("resources") or {}
        given = dict(resources.get(kind) or {})
        if kind == "requests" and resources.get("limits"):
            given = {**resources["limits"], **given}
        return {name: quantity(value) for name, value in given.items()}

    main = [of(c) for c in pod_spec.get("containers") or []]
    inits = pod_spec.get("initContainers") or []
    if not inits:
        return total(main)
    sidecars = [of(c) for c in inits if c.get("restartPolicy") == "Always"]
    starting = [total([of(c), *sidecars]) for c in inits if c.get("restartPolicy") != "Always"]
    return _max([total([*main, *sidecars]), *starting])


def memory_volumes(pod_spec: Json) -> Decimal:
    """What the pod's memory-backed emptyDirs (/dev/shm) may hold: their sizeLimits, capped as the kubelet
    sizes the tmpfs, at the pod's memory limit when every container has one."""
    sizes = [
        quantity(volume["emptyDir"].get("sizeLimit") or 0)
        for volume in pod_spec.get("volumes") or []
        if (volume.get("emptyDir") or {}).get("medium") == "Memory"
    ]
    containers = pod_spec.get("containers") or []
    limits = [((c.get("resources") or {}).get("limits") or {}).get("memory") for c in containers]
    held = sum(sizes, Decimal(0))
    return min(held, sum(map(quantity, limits), Decimal(0))) if limits and None not in limits else held


def quantity(value: Any) -> Decimal:
    return _parsed(value) if isinstance(value, str) else Decimal(parse_quantity(value))  # type: ignore[no-untyped-call]


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Decimal:
    """Quantities repeat across a cluster's pods ("500m", "1Gi"): parse each once."""
    return Decimal(parse_quantity(text))  # type: ignore[no-untyped-call]


def total(amounts: Iterable[Mapping[str, Decimal]]) -> dict[str, Decimal]:
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


def show(resource: str, value: Decimal) -> str:
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
