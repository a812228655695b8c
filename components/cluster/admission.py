"""The admission check: does the MiniCluster fit the cluster as it is, before anything is created?

It reads the cluster with the `kubernetes` client on the same context as the keygen provider (one
paginated list of nodes, one of the pods that hold resources, the namespace's quotas and limit
ranges, as raw JSON: decoding 100 000 pods into client models would take longer than the check),
judges with components.cluster.fit, and answers per `minicluster:admission`: refuse, warn or off.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from components.builders import pod_template
from components.cluster import fit, kube
from components.config.spec import MiniClusterSpec

PAGE = 500
HOLDING_RESOURCES = "status.phase!=Succeeded,status.phase!=Failed"
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"


@dataclass(frozen=True)
class Verdict:
    refused: str | None = None
    """The message to stop `pulumi up` with (admission: refuse, and it does not fit)."""
    warnings: list[str] = field(default_factory=list)
    """What to tell the user and go ahead with."""


def check(spec: MiniClusterSpec, kube_context: str | None) -> Verdict:
    if spec.admission == "off":
        return Verdict()
    queue = spec.job_labels.get(KUEUE_QUEUE)
    if queue and spec.suspend:
        return Verdict(
            warnings=[f"admission: left to Kueue (queue {queue!r}), which admits the Job when there is room"]
        )
    try:
        snapshot = read(kube.api_client(kube_context), spec.namespace)
    except kube.NoCluster as error:
        return Verdict(warnings=[f"admission check skipped: {error}"])
    except Exception as error:
        said = kube.describe(
            kube.problem(error), doing="reading the cluster's room", namespace=spec.namespace,
            needs="list on nodes, pods, resourcequotas and limitranges", context="the kubernetes:context setting",
        )  # fmt: skip
        return Verdict(warnings=[f"admission check skipped: {said}"])
    problems = fit.problems(shape(spec), snapshot)
    if not problems:
        return Verdict()
    text = f"MiniCluster {spec.name!r} does not fit the cluster as it is:\n" + "\n".join(f"  - {p}" for p in problems)
    if spec.admission == "refuse":
        return Verdict(refused=f"{text}\nNothing was created (minicluster:admission is refuse).")
    return Verdict(
        warnings=[f"{text}\nGoing ahead (minicluster:admission is warn): a cluster autoscaler may add room."]
    )


def shape(spec: MiniClusterSpec) -> fit.Shape:
    """The broker pods as the Job asks for them: the very pod template the Job carries."""
    template = pod_template.broker_pod(
        spec, service_name=spec.service, secret_name="-", broker_config="-", entrypoint="-", scale_config="-"
    )  # fmt: skip
    return fit.Shape(spec.size, template["spec"], spec.pod.one_pod_per_node, spec.namespace, spec.name)


def read(api_client: Any, namespace: str, request_timeout: tuple[float, float] = kube.REQUEST_TIMEOUT) -> fit.Snapshot:
    from kubernetes import client

    core = client.CoreV1Api(api_client)

    def pages(call: Callable[..., Any], *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return list(_items(call, *args, _request_timeout=request_timeout, **kwargs))

    return fit.Snapshot(
        nodes=pages(core.list_node),
        pods=pages(core.list_pod_for_all_namespaces, field_selector=HOLDING_RESOURCES),
        quotas=pages(core.list_namespaced_resource_quota, namespace),
        limit_ranges=pages(core.list_namespaced_limit_range, namespace),
    )


def _items(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
    token: str | None = None
    while True:
        response = call(*args, limit=PAGE, _continue=token, _preload_content=False, **kwargs)
        page = json.loads(response.data)
        yield from page.get("items") or []
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return
