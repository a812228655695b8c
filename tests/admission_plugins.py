"""What the API server's admission does to a pod created with dryRun=All, for the API stand-in: the
LimitRanger plugin (Container defaults, then the max per container) and the ResourceQuota plugin (one
pod against each quota's hard limits, with the quota's status.used). The messages are the real
plugins' (k8s.io/kubernetes plugin/pkg/admission/limitranger and resourcequota). The result is what
the server answers; nothing is stored.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

Json = dict[str, Any]


class Refused(Exception):
    """403 Forbidden, with the plugin's message."""


def admit(pod: Json, limit_ranges: list[Json], quotas: list[Json]) -> Json:
    admitted = copy.deepcopy(pod)
    name = admitted["metadata"]["name"]
    for item in (
        item for lr in limit_ranges for item in lr["spec"].get("limits", []) if item.get("type") == "Container"
    ):
        for container in [*admitted["spec"].get("containers", []), *admitted["spec"].get("initContainers", [])]:
            _default(container, item)
            _within_max(name, container, item)
    for quota in quotas:
        _within_quota(name, admitted, quota)
    return admitted


def _default(container: Json, item: Json) -> None:
    resources = container.setdefault("resources", {})
    limits, requests = resources.setdefault("limits", {}), resources.setdefault("requests", {})
    for resource, value in (item.get("default") or {}).items():
        limits.setdefault(resource, value)
    for resource, value in (item.get("defaultRequest") or {}).items():
        requests.setdefault(resource, value)
    for resource, value in limits.items():  # the API server's own defaulting: a limit alone is the request
        requests.setdefault(resource, value)


def _within_max(pod: str, container: Json, item: Json) -> None:
    """limitranger's maxConstraint: a max needs a limit, and neither limit nor request may exceed it."""
    limits, requests = container["resources"].get("limits", {}), container["resources"].get("requests", {})
    for resource, most in (item.get("max") or {}).items():
        said = f'pods "{pod}" is forbidden: maximum {resource} usage per Container is {most}'
        if resource not in limits:
            raise Refused(f"{said}.  No limit is specified")
        if _q(limits[resource]) > _q(most):
            raise Refused(f"{said}, but limit is {limits[resource]}")
        if resource in requests and _q(requests[resource]) > _q(most):
            raise Refused(f"{said}, but request is {requests[resource]}")


def _within_quota(pod: str, admitted: Json, quota: Json) -> None:
    if quota["spec"].get("scopes") or quota["spec"].get("scopeSelector"):
        return
    use = _pod_use(admitted)
    name, used = quota["metadata"]["name"], quota.get("status", {}).get("used") or {}
    for resource, hard in (quota["spec"].get("hard") or {}).items():
        counted = {"cpu": "requests.cpu", "memory": "requests.memory", "count/pods": "pods"}.get(resource, resource)
        if counted.startswith(("requests.", "limits.")) and counted not in use:
            raise Refused(f'pods "{pod}" is forbidden: failed quota: {name}: must specify {counted}')
        if counted in use and _q(used.get(resource, 0)) + use[counted] > _q(hard):
            raise Refused(
                f'pods "{pod}" is forbidden: exceeded quota: {name}, requested: {resource}={use[counted]}, '
                f"used: {resource}={used.get(resource, 0)}, limited: {resource}={hard}"
            )


def _pod_use(pod: Json) -> dict[str, Decimal]:
    use: dict[str, Decimal] = {"pods": Decimal(1)}
    for container in pod["spec"].get("containers", []):
        for kind in ("requests", "limits"):
            for resource, value in (container.get("resources", {}).get(kind) or {}).items():
                use[f"{kind}.{resource}"] = use.get(f"{kind}.{resource}", Decimal(0)) + _q(value)
    return use


def _q(value: Any) -> Decimal:
    return Decimal(parse_quantity(value))  # type: ignore[no-untyped-call]
