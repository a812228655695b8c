"""Every flux-operator setting, on mocks: where each one lands in the manifests (issue 7)."""

from __future__ import annotations

import tomllib
from typing import Any

from tests.conftest import config
from tests.harness import Deployment, deploy
from tests.plain import plain

JOB = "kubernetes:batch/v1:Job"
SERVICE = "kubernetes:core/v1:Service"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def job_of(deployment: Deployment) -> dict[str, Any]:
    return plain(deployment.one(JOB).inputs)  # type: ignore[no-any-return]


def pod_of(deployment: Deployment) -> dict[str, Any]:
    return job_of(deployment)["spec"]["template"]  # type: ignore[no-any-return]


def containers(deployment: Deployment) -> dict[str, dict[str, Any]]:
    """Every container of the broker pod by name: the Flux container, then init containers and sidecars."""
    spec = pod_of(deployment)["spec"]
    return {c["name"]: c for c in [*spec["containers"], *spec.get("initContainers", [])]}


def flux_container(**overrides: Any) -> dict[str, Any]:
    return containers(deploy(config(**overrides)))["flux-broker"]


def data(deployment: Deployment, resource_name: str) -> dict[str, str]:
    (found,) = [r for r in deployment.of_type(CONFIG_MAP) if r.name == resource_name]
    return plain(found.inputs["data"])  # type: ignore[no-any-return]


# -- containers -----------------------------------------------------------------------------------

SIDECAR = {
    "name": "metrics",
    "image": "ghcr.io/example/metrics:1.2",
    "command": ["/bin/exporter"],
    "args": ["--port", "9100"],
    "environment": {"INTERVAL": 5},
    "environmentFromSecrets": {"API_KEY": {"name": "metrics-creds", "key": "api-key"}},
    "resources": {"limits": {"memory": "128Mi"}},
    "ports": [9100],
    "imagePullPolicy": "IfNotPresent",
    "securityContext": {"runAsNonRoot": True},
    "lifecycle": {"preStop": "sleep 2"},
    "volumes": ["scratch"],
}
SCRATCH = {"scratch": {"path": "/scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}}


def test_a_sidecar_gets_every_container_setting() -> None:
    sidecar = containers(deploy(config(containers=[SIDECAR], volumes=SCRATCH)))["metrics"]
    assert sidecar == {
        "name": "metrics",
        "image": "ghcr.io/example/metrics:1.2",
        "restartPolicy": "Always",
        "command": ["/bin/exporter"],
        "args": ["--port", "9100"],
        "env": [
            {"name": "INTERVAL", "value": "5"},
            {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "metrics-creds", "key": "api-key"}}},
        ],
        "resources": {"limits": {"memory": "128Mi"}},
        "ports": [{"containerPort": 9100, "protocol": "TCP"}],
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"runAsNonRoot": True},
        "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", "sleep 2"]}}},
        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
    }


def test_sidecars_are_native_sidecars_so_a_job_with_a_command_still_completes() -> None:
    spec = pod_of(deploy(config(containers=[SIDECAR], volumes=SCRATCH, fluxView={"enabled": True})))["spec"]
    assert [c["name"] for c in spec["containers"]] == ["flux-broker"]
    assert [(c["name"], c.get("restartPolicy")) for c in spec["initContainers"]] == [
        ("flux-view", None),  # runs to completion first: the view must be there before anything uses it
        ("metrics", "Always"),
    ]


def test_the_flux_container_takes_the_same_settings_as_top_level_keys() -> None:
    container = flux_container(
        environmentFromSecrets={"LICENSE": {"name": "app-license", "key": "key"}},
        ports=[9999],
        imagePullPolicy="Always",
        securityContext={"capabilities": {"add": ["SYS_PTRACE"]}},
        lifecycle={"postStart": "echo started"},
    )
    assert {"name": "LICENSE", "valueFrom": {"secretKeyRef": {"name": "app-license", "key": "key"}}} in container["env"]
    assert container["ports"][1:] == [{"containerPort": 9999, "protocol": "TCP"}]
    assert container["imagePullPolicy"] == "Always"
    assert container["securityContext"] == {"capabilities": {"add": ["SYS_PTRACE"]}}
    assert container["lifecycle"] == {"postStart": {"exec": {"command": ["/bin/sh", "-c", "echo started"]}}}


# -- volumes --------------------------------------------------------------------------------------

VOLUMES = {
    "data": {"path": "/data", "claimName": "shared-data", "readOnly": True},
    "host": {"path": "/host-tmp", "hostPath": "/tmp"},
    "inputs": {"path": "/inputs", "configMap": "lammps-inputs"},
    "keys": {"path": "/keys", "secret": "ssh-keys", "readOnly": True},
    "shm": {"path": "/dev/shm", "emptyDir": {"medium": "Memory"}},
}


def test_every_volume_source_becomes_a_pod_volume_and_a_flux_container_mount() -> None:
    deployment = deploy(config(volumes=VOLUMES))
    volumes = {v["name"]: v for v in pod_of(deployment)["spec"]["volumes"]}
    assert {name: {k: v for k, v in volumes[name].items() if k != "name"} for name in VOLUMES} == {
        "data": {"persistentVolumeClaim": {"claimName": "shared-data", "readOnly": True}},
        "host": {"hostPath": {"path": "/tmp"}},
        "inputs": {"configMap": {"name": "lammps-inputs"}},
        "keys": {"secret": {"secretName": "ssh-keys"}},
        "shm": {"emptyDir": {"medium": "Memory"}},
    }
    mounts = containers(deployment)["flux-broker"]["volumeMounts"][5:]
    assert mounts == [
        {"name": "data", "mountPath": "/data", "readOnly": True},
        {"name": "host", "mountPath": "/host-tmp"},
        {"name": "inputs", "mountPath": "/inputs"},
        {"name": "keys", "mountPath": "/keys", "readOnly": True},
        {"name": "shm", "mountPath": "/dev/shm"},
    ]


def test_the_pods_own_volumes_are_exactly_the_names_user_volumes_may_not_take() -> None:
    from flux_minicluster.config.paths import OWN_VOLUMES

    theirs = {name: volume for name, volume in VOLUMES.items() if name != "shm"}  # at /dev/shm, where ours would be
    everything = config(
        volumes=theirs, fluxView={"enabled": True}, command=None, stateVolume={"claimName": "state"},
        restfulApi={"enabled": True, "secretName": "api"}, maxSize=8, autoscale={"enabled": True},
    )  # fmt: skip
    volumes = pod_of(deploy(everything))["spec"]["volumes"]
    assert [v["name"] for v in volumes if v["name"] not in VOLUMES] == list(OWN_VOLUMES)


def test_a_sidecar_mounts_only_the_volumes_it_names() -> None:
    deployment = deploy(
        config(volumes=VOLUMES, containers=[{"name": "side", "image": "busybox:1", "volumes": ["keys"]}])
    )
    assert containers(deployment)["side"]["volumeMounts"] == [{"name": "keys", "mountPath": "/keys", "readOnly": True}]


# -- pod ------------------------------------------------------------------------------------------


def test_pod_settings_land_in_the_pod_template() -> None:
    pod = pod_of(
        deploy(
            config(
                pod={
                    "labels": {"team": "hpc"},
                    "annotations": {"example.com/owner": "alice"},
                    "nodeSelector": {"node.kubernetes.io/instance-type": "c2-standard-60"},
                    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                                ]
                            }
                        }
                    },
                    "serviceAccountName": "flux-runner",
                    "automountServiceAccountToken": False,
                    "runtimeClassName": "nvidia",
                    "schedulerName": "volcano",
                    "priorityClassName": "high",
                    "dnsPolicy": "ClusterFirstWithHostNet",
                    "imagePullSecrets": ["registry-creds"],
                }
            )
        )
    )
    spec = pod["spec"]
    assert pod["metadata"]["labels"]["team"] == "hpc"
    assert pod["metadata"]["annotations"] == {"example.com/owner": "alice"}
    assert spec["nodeSelector"] == {"node.kubernetes.io/instance-type": "c2-standard-60"}
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert list(spec["affinity"]) == ["nodeAffinity"]
    assert (spec["serviceAccountName"], spec["automountServiceAccountToken"]) == ("flux-runner", False)
    assert (spec["runtimeClassName"], spec["schedulerName"], spec["priorityClassName"]) == ("nvidia", "volcano", "high")
    assert spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert spec["imagePullSecrets"] == [{"name": "registry-creds"}]


def test_one_pod_per_node_is_a_required_anti_affinity_on_this_miniclusters_brokers() -> None:
    affinity = pod_of(deploy(config(pod={"onePodPerNode": True})))["spec"]["affinity"]
    (term,) = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"]["app.kubernetes.io/instance"] == "dev"
    assert term["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == "broker"


def test_the_miniclusters_own_labels_are_kept_beside_the_users() -> None:
    labels = pod_of(deploy(config(pod={"labels": {"team": "hpc"}})))["metadata"]["labels"]
    assert labels["app.kubernetes.io/component"] == "broker" and labels["team"] == "hpc"


def test_on_failure_restarts_in_place_and_drops_the_pod_failure_policy_that_needs_never() -> None:
    job = job_of(deploy(config(pod={"restartPolicy": "OnFailure"})))
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert "podFailurePolicy" not in job["spec"]


# -- Job ------------------------------------------------------------------------------------------


def test_job_deadline_labels_and_suspend() -> None:
    deployment = deploy(config(deadlineSeconds=7200, jobLabels={"kueue.x-k8s.io/queue-name": "hpc"}, suspend=True))
    job = job_of(deployment)
    assert job["spec"]["activeDeadlineSeconds"] == 7200
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "hpc"
    assert job["spec"]["suspend"] is True
    assert deployment.options["dev-job"]["ignoreChanges"] == ["spec.suspend"]  # Kueue resumes it, Pulumi lets it


def test_a_job_that_is_not_suspended_has_no_suspend_and_ignores_nothing() -> None:
    deployment = deploy(config())
    assert "suspend" not in job_of(deployment)["spec"]
    assert deployment.options["dev-job"]["ignoreChanges"] == []


def test_immutable_job_fields_replace_the_job_and_delete_it_first() -> None:
    options = deploy(config()).options["dev-job"]
    assert options["replaceOnChanges"] == ["spec.completionMode", "spec.successPolicy", "spec.podFailurePolicy"]
    assert options["deleteBeforeReplace"] is True


# -- Flux -----------------------------------------------------------------------------------------


def test_queue_policy_goes_into_broker_toml() -> None:
    broker = tomllib.loads(data(deploy(config(queuePolicy="easy")), "dev-broker-config")["broker.toml"])
    assert broker["sched-fluxion-qmanager"] == {"queue-policy": "easy"}


def test_broker_attributes_become_lines_for_the_entrypoint() -> None:
    files = data(
        deploy(config(brokerAttributes={"broker.rc1_path": "", "tbon.tcp_user_timeout": "2m"})), "dev-entrypoint"
    )
    assert files["broker.attributes"] == "broker.rc1_path=\ntbon.tcp_user_timeout=2m\n"


def test_a_broker_config_replaces_the_generated_one_whole_but_for_the_overlay_tables_it_lacks() -> None:
    own = '[bootstrap]\ncurve_cert = "/var/lib/minicluster/curve.cert"\nhosts = [{ host = "dev-[0-3]" }]\n'
    written = data(deploy(config(brokerConfig=own)), "dev-broker-config")["broker.toml"]
    assert written == own + '\n[tbon]\nconnect_timeout = "5s"\nzmqdebug = 1\n\n[heartbeat]\ntimeout = "60s"\n'


def test_option_flags_are_split_and_added_after_submit_flags() -> None:
    files = data(
        deploy(config(submitFlags=["--exclusive"], optionFlags="-ompi=openmpi@5 -o cpu-affinity=per-task")),
        "dev-entrypoint",
    )
    assert files["submit.flags"] == "--exclusive\n-ompi=openmpi@5\n-o\ncpu-affinity=per-task\n"


def test_the_broker_pods_mount_no_api_token_unless_the_stack_asks_for_one_or_names_their_account() -> None:
    """Flux needs no Kubernetes API."""
    assert pod_of(deploy(config()))["spec"]["automountServiceAccountToken"] is False
    named = pod_of(deploy(config(pod={"serviceAccountName": "hpc-runner"})))["spec"]
    assert (named["serviceAccountName"], "automountServiceAccountToken" in named) == ("hpc-runner", False)
    asked = pod_of(deploy(config(pod={"automountServiceAccountToken": True})))["spec"]
    assert asked["automountServiceAccountToken"] is True
