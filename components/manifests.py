"""Pure builders: a MiniClusterSpec in, plain Kubernetes objects (dicts, API field names) out.

No Pulumi here. The Pulumi component passes Outputs where a builder takes a name or the certificate,
and `scripts/render.py` passes plain strings: both use these functions, so there is one copy of every
manifest. Every path the pods use is defined once here and reaches the entrypoint as an env var.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import tomli_w

from components.spec import MiniClusterSpec

Manifest = dict[str, Any]

BROKER_CONTAINER = "flux-broker"
ENTRYPOINT_SCRIPT = "entrypoint.sh"
CURVE_CERT_KEY = "curve.cert"
BROKER_CONFIG_KEY = "broker.toml"
# Mount points, all under one prefix so nothing in the image is shadowed.
BROKER_CONFIG_DIR = "/etc/minicluster/broker"
RUN_CONFIG_DIR = "/etc/minicluster/run"
CURVE_DIR = "/etc/minicluster/curve"
STATE_DIR = "/var/lib/minicluster"
# Files the entrypoint writes in STATE_DIR and the broker reads through broker.toml.
PRIVATE_CURVE_CERT = f"{STATE_DIR}/curve.cert"
LOCAL_URI = f"local://{STATE_DIR}/run/local"
"""Where a process in a broker's container (`kubectl exec`) reaches that broker: set FLUX_URI to it."""
RESOURCE_FILE = f"{STATE_DIR}/R"

KEYGEN_CONTAINER = "keygen"
# The keygen pod prints the certificate between markers so no other log line can pollute it.
KEYGEN_SCRIPT = r"""set -eu
dir=$(mktemp -d)
"$MC_FLUX" keygen --name="$MC_CERT_NAME" "$dir/curve.cert" >&2
echo "$MC_BEGIN_MARKER"
cat "$dir/curve.cert"
echo "$MC_END_MARKER"
"""

WAIT_FOR = "pulumi.com/waitFor"
# A pod lost to a node drain or preemption is retried without counting against backoffLimit.
# (Kubernetes 1.29's schema requires `status`; later versions default it to "True".)
DISRUPTED_PODS_ARE_RETRIED = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
AWAIT_TIMEOUT = "pulumi.com/timeoutSeconds"


# -- names and labels -----------------------------------------------------------------------------


def curve_secret_name(spec: MiniClusterSpec) -> str:
    return f"{spec.name}-curve"


def broker_config_name(spec: MiniClusterSpec) -> str:
    return f"{spec.name}-broker-config"


def entrypoint_name(spec: MiniClusterSpec) -> str:
    return f"{spec.name}-entrypoint"


def labels(spec: MiniClusterSpec, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "minicluster",
        "app.kubernetes.io/instance": spec.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "pulumi",
    }


def _metadata(spec: MiniClusterSpec, name: Any, component: str, **extra: Any) -> Manifest:
    named = {} if name is None else {"name": name}
    return {**named, "namespace": spec.namespace, "labels": labels(spec, component), **extra}


# -- file contents --------------------------------------------------------------------------------


def broker_toml(spec: MiniClusterSpec) -> str:
    """The broker config (flux-config-bootstrap(5)): rank = position of the hostname in `hosts`."""
    return tomli_w.dumps(
        {
            "bootstrap": {
                "curve_cert": PRIVATE_CURVE_CERT,
                "default_port": spec.port,
                "default_bind": spec.bind_uri,
                "default_connect": spec.connect_uri,
                "hosts": [{"host": spec.hostlist}],
            },
            # R is written at start by each pod; noverify: nodes need not match it core for core.
            "resource": {"path": RESOURCE_FILE, "noverify": True},
        }
    )


def entrypoint_script() -> str:
    return resources.files("components").joinpath(ENTRYPOINT_SCRIPT).read_text()


def run_config_files(spec: MiniClusterSpec) -> dict[str, str]:
    """The entrypoint and the files that configure it (one item per line, no templating)."""
    files = {ENTRYPOINT_SCRIPT: entrypoint_script()}
    if spec.command is not None:
        files["command.args"] = _lines(spec.command_args)
        files["command.lines"] = _lines(spec.command_lines)
    if spec.submit_flags:
        files["submit.flags"] = _lines(spec.submit_flags)
    for hook in ("init", "pre", "post"):
        snippet = getattr(spec.hooks, hook)
        if snippet:
            files[f"{hook}.sh"] = snippet if snippet.endswith("\n") else snippet + "\n"
    return files


def _lines(items: list[str]) -> str:
    return "".join(f"{item}\n" for item in items)


def entrypoint_env(spec: MiniClusterSpec) -> list[dict[str, str]]:
    settings: dict[str, object | None] = {
        "MC_FLUX": spec.flux_path,
        "MC_MODE": spec.mode,
        "MC_SIZE": spec.size,
        "MC_MAX_SIZE": spec.largest_size,
        "MC_TASKS": spec.tasks,
        "MC_HOST_PREFIX": spec.name,
        "MC_HOSTLIST": spec.hostlist,
        "MC_QUORUM": spec.quorum,
        "MC_TOPOLOGY": spec.topology,
        "MC_CONNECT_TIMEOUT": spec.connect_timeout,
        "MC_LOG_LEVEL": spec.log_level,
        "MC_WORKER_RETRIES": spec.worker_retries,
        "MC_BROKER_CONFIG_DIR": BROKER_CONFIG_DIR,
        "MC_RUN_CONFIG_DIR": RUN_CONFIG_DIR,
        "MC_CURVE_CERT_SOURCE": f"{CURVE_DIR}/{CURVE_CERT_KEY}",
        "MC_STATE_DIR": STATE_DIR,
        "MC_QUIET": spec.logging.quiet,
        "MC_STRICT": spec.logging.strict,
        "MC_DEBUG": spec.logging.debug,
        "MC_TIMED": spec.logging.timed,
    }
    return [{"name": key, "value": _env_value(value)} for key, value in settings.items() if value is not None]


def _env_value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


# -- objects --------------------------------------------------------------------------------------


def curve_secret(spec: MiniClusterSpec, certificate: Any) -> Manifest:
    """`certificate` is the zcert text (an Output in the Pulumi program: it stays secret there)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(spec, curve_secret_name(spec), "curve-certificate"),
        "type": "Opaque",
        "stringData": {CURVE_CERT_KEY: certificate},
    }


def broker_config_map(spec: MiniClusterSpec) -> Manifest:
    return _config_map(spec, broker_config_name(spec), "broker-config", {BROKER_CONFIG_KEY: broker_toml(spec)})


def entrypoint_config_map(spec: MiniClusterSpec) -> Manifest:
    return _config_map(spec, entrypoint_name(spec), "entrypoint", run_config_files(spec))


def _config_map(spec: MiniClusterSpec, name: str, component: str, data: dict[str, str]) -> Manifest:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _metadata(spec, name, component), "data": data}


def headless_service(spec: MiniClusterSpec) -> Manifest:
    """Gives each broker pod the DNS name <host>.<service>.<namespace>.svc.<domain>, from the moment it
    exists (publishNotReadyAddresses), so workers can reach rank 0 before anything is Ready."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(spec, spec.service, "broker-network"),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": labels(spec, "broker"),
            "ports": [{"name": "flux-overlay", "port": spec.port, "targetPort": spec.port, "protocol": "TCP"}],
        },
    }


def job(
    spec: MiniClusterSpec,
    *,
    service_name: Any,
    curve_secret_name: Any,
    broker_config_name: Any,
    entrypoint_name: Any,
) -> Manifest:
    """The Indexed Job of brokers. The names are parameters so the Pulumi program can pass Outputs:
    the Job then follows the Service, Secret and ConfigMaps in the graph and rolls when they change."""
    job_spec: Manifest = {
        "completionMode": "Indexed",
        "completions": spec.size,
        "parallelism": spec.size,
        "backoffLimit": spec.backoff_limit,
        "podFailurePolicy": {"rules": [DISRUPTED_PODS_ARE_RETRIED]},
        "template": {
            "metadata": {"labels": labels(spec, "broker")},
            "spec": _broker_pod_spec(spec, service_name, curve_secret_name, broker_config_name, entrypoint_name),
        },
    }
    if spec.success_policy == "rank0":
        job_spec["successPolicy"] = {"rules": [{"succeededIndexes": "0"}]}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(spec, spec.name, "job", annotations=job_await_annotations(spec)),
        "spec": job_spec,
    }


def job_await_annotations(spec: MiniClusterSpec) -> dict[str, str]:
    """How long `pulumi up` waits, and for what: completion with a command; running pods otherwise,
    because a persistent instance never completes."""
    annotations = {AWAIT_TIMEOUT: str(spec.job_timeout)}
    if spec.persistent:
        annotations[WAIT_FOR] = f"jsonpath={{.status.ready}}={spec.size}"
    return annotations


def _broker_pod_spec(
    spec: MiniClusterSpec, service_name: Any, secret_name: Any, broker_config: Any, entrypoint: Any
) -> Manifest:
    return {
        "subdomain": service_name,
        # The broker matches its short hostname against the hostlist: never the FQDN.
        "setHostnameAsFQDN": False,
        "restartPolicy": "Never",
        "containers": [
            {
                "name": BROKER_CONTAINER,
                "image": spec.image,
                "command": ["/bin/bash", f"{RUN_CONFIG_DIR}/{ENTRYPOINT_SCRIPT}"],
                "env": [*entrypoint_env(spec), *({"name": k, "value": v} for k, v in spec.environment.items())],
                **_resources(spec),
                **({"workingDir": spec.working_dir} if spec.working_dir else {}),
                "ports": [{"name": "flux-overlay", "containerPort": spec.port, "protocol": "TCP"}],
                "volumeMounts": [
                    {"name": "broker-config", "mountPath": BROKER_CONFIG_DIR, "readOnly": True},
                    {"name": "run-config", "mountPath": RUN_CONFIG_DIR, "readOnly": True},
                    {"name": "curve-certificate", "mountPath": CURVE_DIR, "readOnly": True},
                    {"name": "state", "mountPath": STATE_DIR},
                ],
            }
        ],
        "volumes": [
            {"name": "broker-config", "configMap": {"name": broker_config}},
            {"name": "run-config", "configMap": {"name": entrypoint}},
            {"name": "curve-certificate", "secret": {"secretName": secret_name, "defaultMode": 0o400}},
            {"name": "state", "emptyDir": {}},
        ],
    }


def _resources(spec: MiniClusterSpec) -> Manifest:
    wanted = {kind: dict(quantities) for kind, quantities in spec.resources.model_dump().items() if quantities}
    return {"resources": wanted} if wanted else {}


def keygen_pod(spec: MiniClusterSpec, begin_marker: str, end_marker: str) -> Manifest:
    """A one-shot pod that runs `flux keygen` in the cluster's image and prints the certificate.
    generateName: a pod left behind by an interrupted run never blocks the next one."""
    env = {
        "MC_FLUX": spec.flux_path,
        "MC_CERT_NAME": spec.rank0_host,
        "MC_BEGIN_MARKER": begin_marker,
        "MC_END_MARKER": end_marker,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": f"{spec.name}-keygen-", **_metadata(spec, None, "keygen")},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "activeDeadlineSeconds": spec.keygen_timeout,
            "containers": [
                {
                    "name": KEYGEN_CONTAINER,
                    "image": spec.keygen_image or spec.image,
                    "command": ["/bin/sh", "-c", KEYGEN_SCRIPT],
                    "env": [{"name": key, "value": value} for key, value in env.items()],
                }
            ],
        },
    }


def all_objects(spec: MiniClusterSpec, certificate: str) -> list[Manifest]:
    """Every object `pulumi up` creates besides the short-lived keygen pod, in creation order, with
    plain names: what `scripts/render.py` prints."""
    return [
        curve_secret(spec, certificate),
        broker_config_map(spec),
        entrypoint_config_map(spec),
        headless_service(spec),
        job(
            spec,
            service_name=spec.service,
            curve_secret_name=curve_secret_name(spec),
            broker_config_name=broker_config_name(spec),
            entrypoint_name=entrypoint_name(spec),
        ),
    ]
