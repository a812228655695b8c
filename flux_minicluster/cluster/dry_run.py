"""Every object `pulumi up` would create, sent to the API server as a server-side dry run (dryRun=All)
before anything is created. Its validation, its admission (policy webhooks, quotas on object counts)
and its API (is a gang's PodGroup kind installed?) judge each object; nothing is stored. The config
checks refuse what they know Kubernetes refuses; this asks the cluster itself.

An object that exists already (a later `pulumi up`) is Pulumi's to update: its AlreadyExists says
nothing. Secret values are never sent: placeholders stand in for them.
"""

from __future__ import annotations

from typing import Any

from flux_minicluster.builders import manifests, rendering
from flux_minicluster.cluster import kube
from flux_minicluster.config.spec import MiniClusterSpec

CREATE = {
    "Secret": ("CoreV1Api", "create_namespaced_secret"),
    "ConfigMap": ("CoreV1Api", "create_namespaced_config_map"),
    "Service": ("CoreV1Api", "create_namespaced_service"),
    "Job": ("BatchV1Api", "create_namespaced_job"),
}
"""The built-in kinds the program creates, by the client call that creates each; others are custom."""
PLURALS = {"PodGroup": "podgroups"}
PLACEHOLDER_CERTIFICATE = "(not sent: a dry run judges the Secret, not its key)"
RBAC_DENIAL = "cannot create resource"
"""In the RBAC authorizer's refusal ('User "u" cannot create resource "jobs" ...'): a refusal of the
user, not of the object."""


class Skipped(RuntimeError):
    """The dry run could not judge the objects (no access, no answer): the message says why."""


def refusals(api_client: Any, spec: MiniClusterSpec, timeout: tuple[float, float] = kube.REQUEST_TIMEOUT) -> list[str]:
    """Why the API server would refuse objects of this MiniCluster, one line each (none: it takes them
    all). Raises Skipped when it cannot tell."""
    objects = [rendering.without_secret_values(obj) for obj in manifests.all_objects(spec, PLACEHOLDER_CERTIFICATE)]
    found = []
    for obj in objects:
        try:
            _create(api_client, obj, timeout)
        except Exception as error:
            refusal = _refusal(obj, kube.problem(error), spec)
            if refusal:
                found.append(refusal)
    return found


def _create(api_client: Any, obj: manifests.Manifest, timeout: tuple[float, float]) -> None:
    from kubernetes import client

    namespace = obj["metadata"]["namespace"]
    options: dict[str, Any] = {"dry_run": "All", "_preload_content": False, "_request_timeout": timeout}
    if obj["kind"] in CREATE:
        api, call = CREATE[obj["kind"]]
        getattr(getattr(client, api)(api_client), call)(namespace, obj, **options)
        return
    group, version = obj["apiVersion"].split("/")
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        group, version, namespace, PLURALS[obj["kind"]], obj, **options
    )


def _refusal(obj: manifests.Manifest, found: kube.ApiProblem, spec: MiniClusterSpec) -> str | None:
    what = f"the {obj['kind']} {obj['metadata']['name']!r}"
    if found.kind == "conflict":  # it exists: Pulumi updates or replaces it
        return None
    if found.kind == "not-found" and f'namespaces "{spec.namespace}" not found' in found.detail:
        return f"namespace {spec.namespace!r} does not exist: create it, or set minicluster:namespace"
    if found.kind == "not-found" and obj["kind"] in PLURALS:
        return (
            f"the cluster has no {obj['kind']} of {obj['apiVersion']} (its CRD is not installed): install "
            f"{spec.scheduler.gang if spec.scheduler else 'it'}, or unset minicluster:scheduler"
        )
    if found.kind == "rejected" or (found.kind == "denied" and RBAC_DENIAL not in found.detail):
        return f"{what}: {found.detail}"
    needs = "create (a dry run) on what the MiniCluster creates"
    said = kube.describe(found, doing=f"a dry run of {what}", namespace=spec.namespace, needs=needs)
    raise Skipped(said)
