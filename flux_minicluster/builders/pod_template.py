"""The broker pod: the Flux container, the sidecars, the flux-view init container, the volumes and
the scheduling settings. Pure; the names of the objects it mounts are parameters (Outputs in Pulumi)."""

from __future__ import annotations

from typing import Any

from flux_minicluster.builders import autoscaling, flux_view, gang, monitoring, pod_security, restful_api
from flux_minicluster.builders.files import (
    SECRET_ENV_PREFIX,
    entrypoint_env,
    script,
    secret_run_files,
)
from flux_minicluster.builders.names import BROKER_CONTAINER, RERUN, labels
from flux_minicluster.config import lifecycle, paths
from flux_minicluster.config.settings import ContainerSettings
from flux_minicluster.config.spec import MiniClusterSpec
from flux_minicluster.config.volumes import StateVolume, Volume

Manifest = dict[str, Any]


def broker_pod(
    spec: MiniClusterSpec,
    *,
    service_name: Any,
    secret_name: Any,
    broker_config: Any,
    entrypoint: Any,
    scale_config: Any,
    config_secret: Any = None,
    pod_group: Any = None,
) -> Manifest:
    """`config_secret`: the name of the Secret with the secret config values (manifests.config_secret),
    where the stack has any; `pod_group`: the gang's PodGroup, with scheduler.gang."""
    pod = spec.pod
    template_spec: Manifest = {
        "subdomain": service_name,
        # The broker matches its short hostname against the hostlist: never the FQDN.
        "setHostnameAsFQDN": False,
        "restartPolicy": pod.restart_policy,
        "containers": [flux_container(spec, config_secret)],
        "volumes": _volumes(spec, secret_name, broker_config, entrypoint, scale_config, config_secret),
        **_scheduling(spec),
    }
    # The flux view and the RESTful API are put in place first; sidecars are native sidecars (init
    # containers that keep running): they start before the broker and are stopped when it exits, so a
    # Job with a command completes.
    init = [flux_view.init_container(spec)] if spec.flux_view.enabled else []
    init += [restful_api_init_container(spec)] if spec.restful_api.enabled else []
    init += [sidecar(spec, index) for index in range(len(spec.containers))]
    if spec.autoscale.enabled:  # after the flux view: it runs Flux's Python
        init.append(autoscaling.container(spec, scale_config))
        template_spec["volumes"].append(autoscaling.token_volume())
    if init:
        template_spec["initContainers"] = init
    pod_security.secure(spec, template_spec)
    metadata: Manifest = {"labels": {**pod.labels, **labels(spec, "broker")}}
    rerun = {RERUN: str(spec.rerun)} if spec.rerun else {}  # none at 0: an older stack's Job stays
    annotations = {**monitoring.scrape_annotations(spec), **pod.annotations, **rerun}
    if annotations:
        metadata["annotations"] = annotations
    gang.mark(spec, metadata, pod_group)
    return {"metadata": metadata, "spec": template_spec}


def flux_container(spec: MiniClusterSpec, config_secret: Any = None) -> Manifest:
    ports = [{"name": "flux-overlay", "containerPort": spec.port, "protocol": "TCP"}]
    if spec.restful_api.enabled:
        ports.append({"name": "restful-api", "containerPort": spec.restful_api.port, "protocol": "TCP"})
    ports += monitoring.container_port(spec)
    settings = container_settings(
        spec,
        extra_env=entrypoint_env(spec),
        ports=ports,
        secret_env=config_secret if spec.is_secret("environment") else None,
    )
    if spec.gpus:  # the GPUs Flux lists in R are the ones Kubernetes gives the pod
        resources = settings.setdefault("resources", {})
        resources["limits"] = {**resources.get("limits", {}), spec.gpu_resource_name: str(spec.gpus)}
    return {
        "name": BROKER_CONTAINER,
        "image": spec.image,
        "command": ["/bin/bash", paths.ENTRYPOINT],
        **settings,
        "volumeMounts": [*_own_mounts(spec), *_user_mounts(spec, list(spec.volumes))],
        # A broker that fails leaves the end of its log (rank 0's: the command's output and its status) as
        # its termination message, which pulumi-kubernetes puts in `pulumi up`'s error; else only the code.
        "terminationMessagePolicy": "FallbackToLogsOnError",
        # Ready means this broker is up in the instance, not only that its process runs.
        "readinessProbe": {
            "exec": {"command": ["/bin/bash", paths.ENTRYPOINT, "--ready"]},
            "periodSeconds": lifecycle.READY_PERIOD,
            "timeoutSeconds": lifecycle.READY_TIMEOUT,
        },
    }


def sidecar(spec: MiniClusterSpec, index: int) -> Manifest:
    settings = spec.containers[index]
    container: Manifest = {"name": settings.name, "image": settings.image, "restartPolicy": "Always"}
    if settings.command is not None:
        container["command"] = list(settings.command)
    if settings.args is not None:
        container["args"] = list(settings.args)
    container.update(container_settings(settings))
    mounts = _user_mounts(spec, settings.volumes)
    return {**container, "volumeMounts": mounts} if mounts else container


def container_settings(
    settings: ContainerSettings,
    extra_env: list[Manifest] | None = None,
    ports: list[Manifest] | None = None,
    secret_env: Any = None,
) -> Manifest:
    """The fields every container takes from its ContainerSettings (the Flux container and sidecars).
    With `secret_env` (a Secret's name), the environment's values are read from that Secret."""
    env = [
        *(extra_env or []),
        *(
            {"name": name, "value": value}
            if secret_env is None
            else {"name": name, "valueFrom": {"secretKeyRef": {"name": secret_env, "key": SECRET_ENV_PREFIX + name}}}
            for name, value in settings.environment.items()
        ),
        *(
            {"name": name, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}}
            for name, ref in settings.environment_from_secrets.items()
        ),
    ]
    all_ports = [*(ports or []), *({"containerPort": port, "protocol": "TCP"} for port in settings.ports)]
    resources = {kind: dict(amounts) for kind, amounts in settings.resources.model_dump().items() if amounts}
    lifecycle = {
        hook: {"exec": {"command": ["/bin/sh", "-c", command]}}
        for hook, command in (("postStart", settings.lifecycle.post_start), ("preStop", settings.lifecycle.pre_stop))
        if command
    }
    optional = {
        "workingDir": settings.working_dir,
        "env": env,
        "ports": all_ports,
        "resources": resources,
        "imagePullPolicy": settings.image_pull_policy,
        "securityContext": settings.security_context,
        "lifecycle": lifecycle,
    }
    return {key: value for key, value in optional.items() if value}


def restful_api_init_container(spec: MiniClusterSpec) -> Manifest:
    """Installs the RESTful API before the broker starts (with the Flux image: it has python3)."""
    return {
        "name": paths.RESTFUL_API,
        "image": spec.image,
        "command": ["/bin/sh", "-c", script("install_restful_api.sh")],
        "env": restful_api.install_env(spec),
        "volumeMounts": [_restful_api_mount()],
    }


def _restful_api_mount() -> Manifest:
    return {"name": paths.RESTFUL_API, "mountPath": paths.RESTFUL_API_DIR}


def _own_mounts(spec: MiniClusterSpec) -> list[Manifest]:
    mounts: list[Manifest] = [
        {"name": paths.BROKER_CONFIG_VOLUME, "mountPath": paths.BROKER_CONFIG_DIR, "readOnly": True},
        {"name": paths.RUN_CONFIG_VOLUME, "mountPath": paths.RUN_CONFIG_DIR, "readOnly": True},
        {"name": paths.CURVE_VOLUME, "mountPath": paths.CURVE_DIR, "readOnly": True},
        {"name": paths.SCALE_VOLUME, "mountPath": paths.SCALE_DIR, "readOnly": True},
        {"name": paths.STATE_VOLUME_OF_POD, "mountPath": paths.STATE_DIR},
    ]
    mounts += flux_view.mounts(spec)
    if spec.restful_api.enabled:
        mounts.append(_restful_api_mount())
    if spec.state_volume is not None:
        mounts.append({"name": paths.STATE_VOLUME_NAME, "mountPath": paths.STATE_VOLUME})
    if spec.shared_memory_size is not None:
        mounts.append({"name": paths.SHARED_MEMORY_VOLUME, "mountPath": paths.SHARED_MEMORY_DIR})
    return mounts


def _user_mounts(spec: MiniClusterSpec, names: list[str]) -> list[Manifest]:
    mounts = []
    for name in names:
        volume = spec.volumes[name]
        mount: Manifest = {"name": name, "mountPath": volume.path}
        if volume.read_only:
            mount["readOnly"] = True
        mounts.append(mount)
    return mounts


def _volumes(
    spec: MiniClusterSpec, secret_name: Any, broker_config: Any, entrypoint: Any, scale_config: Any, config_secret: Any
) -> list[Manifest]:
    volumes: list[Manifest] = [
        {"name": paths.BROKER_CONFIG_VOLUME, "configMap": {"name": broker_config}},
        {"name": paths.RUN_CONFIG_VOLUME, **_run_config_source(spec, entrypoint, config_secret)},
        # Not subPath-mounted: a resize's new numbers reach running pods too (rank 0 reads them on restart).
        {"name": paths.SCALE_VOLUME, "configMap": {"name": scale_config}},
        # Readable by the container's user whoever that is (root owns Secret files): the entrypoint
        # copies it to the private 0600 file the broker reads, and no other container mounts it.
        {"name": paths.CURVE_VOLUME, "secret": {"secretName": secret_name, "defaultMode": 0o444}},
        {"name": paths.STATE_VOLUME_OF_POD, "emptyDir": {}},
    ]
    if spec.flux_view.enabled:
        volumes.append({"name": paths.FLUX_VIEW, "emptyDir": {}})
    if spec.restful_api.enabled:
        volumes.append({"name": paths.RESTFUL_API, "emptyDir": {}})
    if spec.state_volume is not None:
        volumes.append({"name": paths.STATE_VOLUME_NAME, **state_volume_source(spec.state_volume)})
    if spec.shared_memory_size is not None:  # a tmpfs instead of the runtime's 64 MiB /dev/shm
        memory = {"medium": "Memory", "sizeLimit": spec.shared_memory_size}
        volumes.append({"name": paths.SHARED_MEMORY_VOLUME, "emptyDir": memory})
    return volumes + [{"name": name, **volume_source(volume)} for name, volume in spec.volumes.items()]


def _run_config_source(spec: MiniClusterSpec, entrypoint: Any, config_secret: Any) -> Manifest:
    """The entrypoint's directory: its ConfigMap, and the secret files (command, hooks) beside them."""
    secret_files = sorted(secret_run_files(spec))
    if not secret_files:
        return {"configMap": {"name": entrypoint}}
    items = [{"key": name, "path": name} for name in secret_files]
    return {
        "projected": {
            "sources": [{"configMap": {"name": entrypoint}}, {"secret": {"name": config_secret, "items": items}}]
        }
    }


def volume_source(volume: Volume) -> Manifest:
    if volume.claim_name is not None:
        return {"persistentVolumeClaim": {"claimName": volume.claim_name, "readOnly": volume.read_only}}
    if volume.host_path is not None:
        return {"hostPath": {"path": volume.host_path}}
    if volume.config_map is not None:
        return {"configMap": {"name": volume.config_map}}
    if volume.secret is not None:
        return {"secret": {"secretName": volume.secret}}
    assert volume.empty_dir is not None  # the model allows exactly one source
    empty_dir = {"medium": volume.empty_dir.medium, "sizeLimit": volume.empty_dir.size_limit}
    return {"emptyDir": {key: value for key, value in empty_dir.items() if value}}


def state_volume_source(volume: StateVolume) -> Manifest:
    if volume.claim_name is not None:
        return {"persistentVolumeClaim": {"claimName": volume.claim_name}}
    return {"hostPath": {"path": volume.host_path, "type": "DirectoryOrCreate"}}


def placement(spec: MiniClusterSpec) -> Manifest:
    """Where the stack lets its pods go and what they may pull with: pod.nodeSelector, tolerations and
    imagePullSecrets, those it set."""
    pod = spec.pod
    optional = {
        "nodeSelector": dict(pod.node_selector),
        "tolerations": [toleration.manifest() for toleration in pod.tolerations],
        "imagePullSecrets": [{"name": name} for name in pod.image_pull_secrets],
    }
    return {key: value for key, value in optional.items() if value}


def _scheduling(spec: MiniClusterSpec) -> Manifest:
    pod = spec.pod
    optional = {
        **placement(spec),
        "affinity": _affinity(spec),
        "serviceAccountName": autoscaling.service_account_name(spec),
        "automountServiceAccountToken": autoscaling.api_token(spec),
        "runtimeClassName": pod.runtime_class_name,
        "schedulerName": spec.scheduler.scheduler_name if spec.scheduler else pod.scheduler_name,
        "priorityClassName": pod.priority_class_name,
        "dnsPolicy": pod.dns_policy,
    }
    return {key: value for key, value in optional.items() if value is not None and value != [] and value != {}}


def _affinity(spec: MiniClusterSpec) -> Manifest | None:
    affinity = dict(spec.pod.affinity or {})
    if spec.pod.one_pod_per_node:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels(spec, "broker")}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    return affinity or None
