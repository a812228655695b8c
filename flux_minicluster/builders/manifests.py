"""Pure builders: a MiniClusterSpec in, plain Kubernetes objects (dicts, API field names) out.

No Pulumi here. The Pulumi component passes Outputs where a builder takes a name or the certificate,
and `scripts/render.py` passes plain strings: both use these functions, so there is one copy of every
manifest. Names live in names.py, file contents in files.py, the broker pod in pod_template.py, the
keygen pod in keygen.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flux_minicluster.builders import (
    admission_policy,
    autoscaling,
    gang,
    keeper,
    monitoring,
    pod_template,
)
from flux_minicluster.builders.files import (
    BROKER_CONFIG_KEY,
    CURVE_CERT_KEY,
    broker_toml,
    config_secret_data,
    entrypoint_env,
    run_config_files,
)
from flux_minicluster.builders.names import (
    AWAIT_TIMEOUT,
    BROKER_CONTAINER,
    INDEX_LABEL,
    SKIP_AWAIT,
    broker_config_name,
    config_secret_name,
    curve_secret_name,
    entrypoint_name,
    labels,
    object_metadata,
    pod_group_name,
    scale_config_name,
)
from flux_minicluster.config.paths import LOCAL_URI, STATE_DIR
from flux_minicluster.config.sizing import scale_files
from flux_minicluster.config.spec import MiniClusterSpec

__all__ = [  # what callers use from here, wherever it is defined
    "BROKER_CONFIG_KEY", "BROKER_CONTAINER", "CURVE_CERT_KEY", "LOCAL_URI", "STATE_DIR", "all_objects",
    "broker_config_map", "broker_toml", "config_secret", "curve_secret", "entrypoint_config_map", "entrypoint_env",
    "headless_service", "job", "labels", "pod_group", "restful_api_service", "run_config_files",
    "scale_config_map",
]  # fmt: skip

Manifest = dict[str, Any]

# A pod lost to a node drain or preemption is retried without counting against backoffLimit.
# (Kubernetes 1.29's schema requires `status`; later versions default it to "True".)
DISRUPTED_PODS_ARE_RETRIED = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}


def curve_secret(spec: MiniClusterSpec, certificate: Any) -> Manifest:
    """`certificate` is the zcert text (an Output in the Pulumi program: it stays secret there)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": object_metadata(spec, curve_secret_name(spec), "curve-certificate"),
        "type": "Opaque",
        "stringData": {CURVE_CERT_KEY: certificate},
    }


def config_secret(spec: MiniClusterSpec) -> Manifest | None:
    """The values of the config keys the stack marks secret (environment, command, hooks), or None.
    The Pulumi program passes them as secret Outputs; the pod reads them from here only."""
    data = config_secret_data(spec)
    if not data:
        return None
    metadata = object_metadata(spec, config_secret_name(spec), "config-secret")
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "Opaque", "stringData": data}


def broker_config_map(spec: MiniClusterSpec) -> Manifest:
    return _config_map(spec, broker_config_name(spec), "broker-config", {BROKER_CONFIG_KEY: broker_toml(spec)})


def entrypoint_config_map(spec: MiniClusterSpec) -> Manifest:
    return _config_map(spec, entrypoint_name(spec), "entrypoint", run_config_files(spec))


def scale_config_map(spec: MiniClusterSpec) -> Manifest:
    """The current size, read by each broker at start: on an elastic cluster a resize rewrites it in
    place, so the Job's pod template stays the same at every size."""
    return _config_map(spec, scale_config_name(spec), "scale", scale_files(spec.size, spec.min_size, spec.largest_size))


def _config_map(spec: MiniClusterSpec, name: str, component: str, data: dict[str, str]) -> Manifest:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": object_metadata(spec, name, component), "data": data}


def pod_group(spec: MiniClusterSpec) -> Manifest | None:
    """The gang's PodGroup (scheduler.gang), or None: its scheduler places every broker at once, or none."""
    if spec.scheduler is None:
        return None
    return {
        "apiVersion": gang.API_VERSIONS[spec.scheduler.gang],
        "kind": "PodGroup",
        "metadata": object_metadata(spec, pod_group_name(spec), "gang"),
        "spec": gang.pod_group_spec(spec),
    }


def headless_service(spec: MiniClusterSpec) -> Manifest:
    """Gives each broker pod the DNS name <host>.<service>.<namespace>.svc.<domain>, from the moment it
    exists (publishNotReadyAddresses), so workers can reach rank 0 before anything is Ready.

    Not awaited: pulumi-kubernetes takes a headless Service as ready once it exists, which its create
    already says, yet its await first starts watches on Services and Endpoints (0.2 s). The Job takes
    the Service's name from the resource, so that await would delay the Job's creation."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_metadata(spec, spec.service, "broker-network", annotations=not_awaited()),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": labels(spec, "broker"),
            "ports": [
                {"name": "flux-overlay", "port": spec.port, "targetPort": spec.port, "protocol": "TCP"},
                *monitoring.service_port(spec),
            ],
        },
    }


def restful_api_service(spec: MiniClusterSpec) -> Manifest:
    """A stable address for the RESTful API: rank 0's pod only (the index label picks it).

    Not awaited: the MiniCluster's Scale resource waits for every broker's pod, rank 0's with them,
    which is when this Service has its endpoint. pulumi-kubernetes would then wait 10 s more for the
    Service's Endpoints to settle (on the real engines, `pulumi up` of such a Service and a pod took
    11 s awaited, 0.8 s not)."""
    port = spec.restful_api.port
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_metadata(spec, spec.api_service, "restful-api", annotations=not_awaited()),
        "spec": {
            "selector": {**labels(spec, "broker"), INDEX_LABEL: "0"},
            "ports": [{"name": "restful-api", "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }


def job(
    spec: MiniClusterSpec,
    *,
    service_name: Any,
    curve_secret_name: Any,
    broker_config_name: Any,
    entrypoint_name: Any,
    scale_config_name: Any,
    config_secret_name: Any = None,
    pod_group_name: Any = None,
) -> Manifest:
    """The Indexed Job of brokers. The names are parameters so the Pulumi program can pass Outputs:
    the Job then follows the Service, Secret and ConfigMaps in the graph and rolls when they change.
    `completions` and `parallelism` (the size) are the only fields a resize changes."""
    template = pod_template.broker_pod(
        spec, service_name=service_name, secret_name=curve_secret_name, broker_config=broker_config_name,
        entrypoint=entrypoint_name, scale_config=scale_config_name, config_secret=config_secret_name,
        pod_group=pod_group_name,
    )  # fmt: skip
    job_spec: Manifest = {
        "completionMode": "Indexed",
        "completions": spec.size,
        "parallelism": spec.size,
        "backoffLimit": spec.backoff_limit,
        # A lost pod's replacement starts only once the old pod is gone: two rank 0 brokers must never
        # run at once (the saved instance's lock guards it too, on clusters that ignore this field).
        "podReplacementPolicy": "Failed",
        "template": template,
    }
    if spec.pod.restart_policy == "Never":  # a podFailurePolicy requires it
        job_spec["podFailurePolicy"] = {"rules": [DISRUPTED_PODS_ARE_RETRIED]}
    if spec.success_policy == "rank0":
        job_spec["successPolicy"] = {"rules": [{"succeededIndexes": "0"}]}
    if spec.deadline_seconds is not None:
        job_spec["activeDeadlineSeconds"] = spec.deadline_seconds
    if spec.suspend:
        job_spec["suspend"] = True
    metadata = object_metadata(spec, spec.name, "job", annotations=job_await_annotations(spec))
    metadata["labels"] = {**spec.job_labels, **metadata["labels"]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": job_spec}


def not_awaited() -> dict[str, str]:
    """The annotation that tells pulumi-kubernetes to return once it created (or updated) the object."""
    return {SKIP_AWAIT: "true"}


def job_await_annotations(spec: MiniClusterSpec) -> dict[str, str]:
    """How long `pulumi up` waits, and for what. A one-shot command: the Job's completion. An elastic
    cluster never completes (or, with a launcher, not before the user resizes it), and a condition
    naming its size would go stale at the first resize: the Job is not awaited, and the MiniCluster's
    Scale resource waits for its pods instead (flux_minicluster.cluster.scale), at every size."""
    if spec.elastic:
        return not_awaited()
    return {AWAIT_TIMEOUT: str(spec.job_timeout)}


def all_objects(
    spec: MiniClusterSpec, certificate: str, live_name: Callable[[str], str] = lambda name: name
) -> list[Manifest]:
    """Every object `pulumi up` creates besides the short-lived keygen pod, in creation order: what
    `scripts/render.py` prints. The Secrets and ConfigMaps, which pulumi-kubernetes auto-names, are
    named `live_name(<their name>)` (render.py: their plain names), and everything that refers to one
    takes that name, as it takes the created object's in the Pulumi program."""
    secret_config = config_secret(spec)
    curve, broker, entrypoint, scale = (curve_secret(spec, certificate), broker_config_map(spec),
                                        entrypoint_config_map(spec), scale_config_map(spec))  # fmt: skip
    keeper_scripts = keeper.scripts_config_map(spec)
    contents = [curve, *([secret_config] if secret_config is not None else []), broker, entrypoint, scale,
                *([keeper_scripts] if keeper_scripts is not None else [])]  # fmt: skip
    for obj in contents:
        obj["metadata"]["name"] = live_name(obj["metadata"]["name"])
    scale_name = scale["metadata"]["name"]
    objects = [
        *contents,
        headless_service(spec),
        *autoscaling.objects(spec, scale_name),
        *admission_policy.objects(spec, scale_name),
    ]
    if spec.restful_api.enabled:
        objects.append(restful_api_service(spec))
    gang_group = pod_group(spec)
    if gang_group is not None:
        objects.append(gang_group)
    monitor = monitoring.service_monitor(spec)
    if monitor is not None:
        objects.append(monitor)
    objects.append(
        job(
            spec,
            service_name=spec.service,
            curve_secret_name=curve["metadata"]["name"],
            broker_config_name=broker["metadata"]["name"],
            entrypoint_name=entrypoint["metadata"]["name"],
            scale_config_name=scale_name,
            config_secret_name=secret_config["metadata"]["name"] if secret_config is not None else None,
            pod_group_name=pod_group_name(spec) if gang_group is not None else None,
        )
    )
    if keeper_scripts is not None:  # after the Job it keeps
        objects += [*keeper.access(spec), keeper.deployment(spec, keeper_scripts["metadata"]["name"])]
    return objects
