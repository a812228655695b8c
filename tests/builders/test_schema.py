"""Every manifest conforms to the Kubernetes OpenAPI schemas, 1.29 to the newest (issue 5)."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from flux_minicluster.builders import keygen, manifests
from flux_minicluster.config import certificate
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests import schemas
from tests.conftest import config
from tests.schemas import SUPPORTED, assert_conforms

EXAMPLES: dict[str, dict[str, Any]] = {
    "hello": config(),
    "persistent": config(command=None, size=1),
    "launcher": config(mode="launcher", command="snakemake --cores 4", tasks=4),
    "batch": config(mode="batch", command="echo a\necho b", submitFlags=["--exclusive"]),
    "interactive-elastic": config(mode="interactive", size=2, maxSize=16, minSize=1, topology="kary:4"),
    "everything-else": config(
        name="lammps",
        namespace="hpc",
        serviceName="lammps-net",
        size=64,
        tasks=256,
        fluxPath="/opt/flux/bin/flux",
        networkInterface="*",
        clusterDomain="corp.example",
        port=9050,
        logLevel=7,
        connectTimeout="2s",
        workerRetries=20,
        backoffLimit=2,
        jobTimeout=7200,
        keygen="local",
        keygenImage="fluxrm/flux-core:noble",
        keygenTimeout=120,
        certificateRotation=2,
        environment={"OMP_NUM_THREADS": 4, "FLUX_DEBUG": True},
        resources={"requests": {"cpu": "3500m", "memory": "8Gi"}, "limits": {"memory": "8Gi", "nvidia.com/gpu": 1}},
        hooks={"init": "id", "pre": "env", "post": "echo done"},
        logging={"quiet": True, "strict": True, "debug": True, "timed": True},
    ),
    "state-volume": config(mode="interactive", stateVolume={"claimName": "flux-state", "checkpointPeriod": "1m"}),
    "operator-spec": config(
        command=None,
        containers=[
            {
                "name": "metrics",
                "image": "ghcr.io/example/metrics:1.2",
                "command": ["/bin/exporter"],
                "args": ["-v"],
                "environment": {"A": 1},
                "environmentFromSecrets": {"KEY": {"name": "creds", "key": "k"}},
                "resources": {"limits": {"memory": "128Mi"}},
                "ports": [9100],
                "imagePullPolicy": "Always",
                "securityContext": {"runAsNonRoot": True},
                "lifecycle": {"postStart": "true", "preStop": "sleep 1"},
                "volumes": ["data", "shm"],
            }
        ],
        volumes={
            "data": {"path": "/data", "claimName": "shared", "readOnly": True},
            "host": {"path": "/h", "hostPath": "/tmp"},
            "inputs": {"path": "/inputs", "configMap": "inputs"},
            "keys": {"path": "/keys", "secret": "keys"},
            "shm": {"path": "/dev/shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
        },
        pod={
            "labels": {"team": "hpc"},
            "annotations": {"example.com/a": "b"},
            "nodeSelector": {"pool": "hpc"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 1,
                            "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                        }
                    ]
                }
            },
            "onePodPerNode": True,
            "serviceAccountName": "runner",
            "automountServiceAccountToken": False,
            "runtimeClassName": "nvidia",
            "schedulerName": "volcano",
            "priorityClassName": "high",
            "restartPolicy": "OnFailure",
            "dnsPolicy": "ClusterFirst",
            "imagePullSecrets": ["registry"],
        },
        environmentFromSecrets={"LICENSE": {"name": "license", "key": "key"}},
        ports=[7000],
        imagePullPolicy="IfNotPresent",
        securityContext={"capabilities": {"add": ["SYS_PTRACE"]}},
        lifecycle={"preStop": "flux shutdown || true"},
        deadlineSeconds=86400,
        jobLabels={"kueue.x-k8s.io/queue-name": "q"},
        suspend=True,
        queuePolicy="easy",
        brokerAttributes={"tbon.tcp_user_timeout": "2m"},
        optionFlags="-ompi=openmpi@5",
        fluxView={"enabled": True},
        restfulApi={"enabled": True, "secretName": "api-creds", "port": 5001},
    ),
    "gpus": config(gpus=2, tasks=8, gpusPerTask=1, gpuResource="amd.com/gpu"),
    "restricted": config(
        command=None,
        securityProfile="restricted",
        fluxView={"enabled": True},
        stateVolume={"claimName": "flux-state", "accessMode": "ReadWriteMany"},
        pod={"runAsUser": 2000, "fsGroup": 3000},
        securityContext={"capabilities": {"add": ["NET_BIND_SERVICE"]}, "readOnlyRootFilesystem": True},
    ),
    "gang": config(scheduler={"gang": "volcano", "queue": "hpc"}),
}


def spec_of(raw: dict[str, Any]) -> MiniClusterSpec:
    return load_spec({f"minicluster:{key}": value for key, value in raw.items()}, "dev")


def objects(spec: MiniClusterSpec) -> list[dict[str, Any]]:
    """The built-in kinds (a gang's PodGroup is checked against its CRD's schema: test_gang.py)."""
    cert = certificate.generate(spec.rank0_host).text()
    built_in = [obj for obj in manifests.all_objects(spec, cert) if obj["kind"] != "PodGroup"]
    return [*built_in, keygen.keygen_pod(spec)]


def test_the_supported_range_reaches_the_newest_schema_available() -> None:
    assert SUPPORTED[0] == "1.29.0"
    assert SUPPORTED[-1] == kubernetes_validate.latest_version()


@pytest.mark.parametrize("version", SUPPORTED)
@pytest.mark.parametrize("example", list(EXAMPLES))
def test_every_object_of_every_example_conforms(example: str, version: str) -> None:
    for obj in objects(spec_of(EXAMPLES[example])):
        assert_conforms(obj, version)


@pytest.mark.parametrize("version", [v for v in SUPPORTED if v >= "1.31"])
def test_rank0_success_policy_conforms_from_1_31(version: str) -> None:
    job = manifests.all_objects(spec_of(config(successPolicy="rank0")), "cert")[-1]
    assert job["spec"]["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}
    assert_conforms(job, version)


def test_rank0_success_policy_is_unknown_to_1_29_which_is_why_it_is_not_the_default() -> None:
    """(1.30 knows the field as alpha, off by default; 1.31 turns it on.)"""
    job = manifests.all_objects(spec_of(config(successPolicy="rank0")), "cert")[-1]
    assert "successPolicy" in str(schemas.problem(job, "1.29.0"))
