"""The Pulumi program on mocks: what `pulumi up` declares for a stack config (issue 2)."""

from __future__ import annotations

import tomllib
from typing import Any

import hostlist
import pytest

from tests.conftest import IMAGE, config
from tests.harness import KEYGEN_CERTIFICATE, Deployment, await_annotations, deploy, deploy_rejected
from tests.plain import is_secret, plain

JOB = "kubernetes:batch/v1:Job"
GUARD = "pulumi-python:dynamic/minicluster:SchedulingGuard"
DELETION = "pulumi-python:dynamic/minicluster:JobDeletion"
SCALE = "pulumi-python:dynamic/minicluster:Scale"
SERVICE = "kubernetes:core/v1:Service"
SECRET = "kubernetes:core/v1:Secret"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
COMPONENT = "minicluster:index:MiniCluster"
KEYGEN = "pulumi-python:dynamic/minicluster:CurveCertificate"
SIZES = [1, 4, 1000]


@pytest.fixture(scope="module", params=SIZES, ids=[f"size{n}" for n in SIZES])
def sized(request: pytest.FixtureRequest) -> tuple[int, Deployment]:
    return request.param, deploy(config(size=request.param))


def job_spec(deployment: Deployment) -> dict[str, Any]:
    return plain(deployment.one(JOB).inputs["spec"])  # type: ignore[no-any-return]


def pod_spec(deployment: Deployment) -> dict[str, Any]:
    return job_spec(deployment)["template"]["spec"]  # type: ignore[no-any-return]


def broker_container(deployment: Deployment) -> dict[str, Any]:
    return pod_spec(deployment)["containers"][0]  # type: ignore[no-any-return]


def config_map(deployment: Deployment, name: str) -> dict[str, str]:
    found = [r for r in deployment.of_type(CONFIG_MAP) if r.name == name]
    assert len(found) == 1
    return plain(found[0].inputs["data"])  # type: ignore[no-any-return]


def test_declares_one_component_with_keygen_secret_three_config_maps_service_job_its_deletion_and_guard(
    sized: tuple[int, Deployment],
) -> None:
    _, deployment = sized
    assert deployment.kinds == sorted([COMPONENT, KEYGEN, SECRET, *[CONFIG_MAP] * 3, SERVICE, JOB, DELETION, GUARD])


def test_every_child_is_parented_to_the_component_and_prefixed_with_its_name(sized: tuple[int, Deployment]) -> None:
    _, deployment = sized
    component = deployment.one(COMPONENT)
    children = [r for r in deployment.resources if r is not component]
    assert {deployment.parent(r) for r in children} == {deployment.urn(component)}
    assert all(r.name.startswith(f"{component.name}-") for r in children)


def test_job_is_indexed_with_one_completion_per_broker(sized: tuple[int, Deployment]) -> None:
    size, deployment = sized
    spec = job_spec(deployment)
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", size, size)
    assert deployment.one(JOB).inputs["metadata"]["name"] == "dev"


def test_job_pods_use_the_service_as_subdomain_and_short_hostnames(sized: tuple[int, Deployment]) -> None:
    _, deployment = sized
    pod = pod_spec(deployment)
    assert pod["subdomain"] == "dev"
    assert pod["setHostnameAsFQDN"] is False
    assert pod["restartPolicy"] == "Never"


def test_job_fails_instead_of_rerunning_a_failing_command(sized: tuple[int, Deployment]) -> None:
    _, deployment = sized
    assert job_spec(deployment)["backoffLimit"] == 0


def test_job_has_no_ttl_because_pulumi_would_recreate_a_deleted_job(sized: tuple[int, Deployment]) -> None:
    _, deployment = sized
    assert "ttlSecondsAfterFinished" not in job_spec(deployment)


def test_broker_container_runs_the_entrypoint_from_its_config_map(sized: tuple[int, Deployment]) -> None:
    _, deployment = sized
    container = broker_container(deployment)
    assert container["image"] == IMAGE
    assert container["command"] == ["/bin/bash", "/etc/minicluster/run/entrypoint.sh"]


def test_environment_is_added_after_the_entrypoints_own_variables() -> None:
    env = broker_container(deploy(config(environment={"OMP_NUM_THREADS": 4, "LAMMPS_HOME": "/opt"})))["env"]
    assert env[-2:] == [{"name": "OMP_NUM_THREADS", "value": "4"}, {"name": "LAMMPS_HOME", "value": "/opt"}]
    assert {"name": "MC_SCALE_DIR", "value": "/etc/minicluster/scale"} in env


def test_resources_reach_the_broker_container_and_are_absent_by_default() -> None:
    wanted = {"requests": {"cpu": "2"}, "limits": {"memory": "4Gi", "nvidia.com/gpu": "1"}}
    assert broker_container(deploy(config(resources=wanted)))["resources"] == wanted
    assert "resources" not in broker_container(deploy(config()))


def test_broker_mounts_config_script_certificate_and_state(sized: tuple[int, Deployment]) -> None:
    _, deployment = sized
    mounts = {
        m["name"]: (m["mountPath"], m.get("readOnly", False)) for m in broker_container(deployment)["volumeMounts"]
    }
    volumes = {v["name"]: v for v in pod_spec(deployment)["volumes"]}
    assert mounts == {
        "broker-config": ("/etc/minicluster/broker", True),
        "run-config": ("/etc/minicluster/run", True),
        "curve-certificate": ("/etc/minicluster/curve", True),
        "scale": ("/etc/minicluster/scale", True),
        "state": ("/var/lib/minicluster", False),
        "shared-memory": ("/dev/shm", False),
    }
    assert volumes["scale"]["configMap"]["name"] == deployment.live_name("dev-scale")
    assert volumes["broker-config"]["configMap"]["name"] == deployment.live_name("dev-broker-config")
    assert volumes["run-config"]["configMap"]["name"] == deployment.live_name("dev-entrypoint")
    assert volumes["curve-certificate"]["secret"] == {
        "secretName": deployment.live_name("dev-curve"),
        "defaultMode": 0o444,
    }
    assert volumes["state"] == {"name": "state", "emptyDir": {}}
    assert volumes["shared-memory"] == {"name": "shared-memory", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}


def test_service_is_headless_publishes_unready_pods_and_selects_only_broker_pods(sized: tuple[int, Deployment]) -> None:
    _, deployment = sized
    service = plain(deployment.one(SERVICE).inputs)
    pod_labels = job_spec(deployment)["template"]["metadata"]["labels"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"] == pod_labels
    assert service["spec"]["selector"]["app.kubernetes.io/instance"] == "dev"
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "broker"


def test_the_job_waits_for_the_service_to_exist_not_for_the_providers_await_of_it() -> None:
    """A headless Service is ready once it exists; the provider's await of it starts two watches first."""
    deployment = deploy(config())
    assert await_annotations(deployment.one(SERVICE).inputs) == {"pulumi.com/skipAwait": "true"}
    assert deployment.urn(deployment.one(SERVICE)) in deployment.options["dev-job"]["dependencies"]


def test_secret_holds_the_keygen_certificate_as_a_pulumi_secret(sized: tuple[int, Deployment]) -> None:
    _, deployment = sized
    string_data = deployment.one(SECRET).inputs["stringData"]
    assert is_secret(string_data)
    assert plain(string_data) == {"curve.cert": KEYGEN_CERTIFICATE.text()}


def test_no_config_map_and_no_output_contains_the_secret_key(sized: tuple[int, Deployment]) -> None:
    _, deployment = sized
    secret_key = KEYGEN_CERTIFICATE.secret_key
    for resource in deployment.of_type(CONFIG_MAP):
        assert secret_key not in repr(plain(resource.inputs))
    assert secret_key not in repr(deployment.outputs)


def test_broker_toml_hostlist_expands_to_every_rank(sized: tuple[int, Deployment]) -> None:
    size, deployment = sized
    broker = tomllib.loads(config_map(deployment, "dev-broker-config")["broker.toml"])
    (entry,) = broker["bootstrap"]["hosts"]
    assert hostlist.expand_hostlist(entry["host"]) == [f"dev-{rank}" for rank in range(size)]


def test_outputs_name_the_cluster_and_how_to_follow_rank0(sized: tuple[int, Deployment]) -> None:
    size, deployment = sized
    assert deployment.outputs == {
        "name": "dev",
        "namespace": "default",
        "size": size,
        "serviceName": "dev",
        "jobName": "dev",
        "rank0Hostname": "dev-0",
        "publicKey": KEYGEN_CERTIFICATE.public_key,
        "logsCommand": "kubectl logs -f -n default -c flux-broker "
        "-l job-name=dev,batch.kubernetes.io/job-completion-index=0",
    }


def test_job_with_a_command_is_awaited_to_completion_within_the_timeout() -> None:
    assert await_annotations(deploy(config(jobTimeout=900)).one(JOB).inputs) == {"pulumi.com/timeoutSeconds": "900"}


@pytest.mark.parametrize("overrides", [{"command": None}, {"mode": "interactive"}, {"mode": "launcher"}])
def test_an_elastic_cluster_is_awaited_by_its_scale_resource_not_by_the_provider(overrides: dict[str, Any]) -> None:
    """A condition naming the size would go stale at the first resize (and never complete)."""
    deployment = deploy(config(**overrides))
    assert await_annotations(deployment.one(JOB).inputs) == {"pulumi.com/skipAwait": "true"}
    assert plain(deployment.one(SCALE).inputs)["jobTimeout"] == 3600


def test_name_and_namespace_come_from_config_and_name_defaults_to_the_stack() -> None:
    assert deploy(config(), stack="prod").outputs["name"] == "prod"
    deployment = deploy(config(name="lammps", namespace="hpc"))
    metadata = deployment.one(JOB).inputs["metadata"]
    assert {**metadata, "annotations": await_annotations(deployment.one(JOB).inputs)} == {
        "name": "lammps",
        "namespace": "hpc",
        "labels": {
            "app.kubernetes.io/name": "minicluster",
            "app.kubernetes.io/instance": "lammps",
            "app.kubernetes.io/component": "job",
            "app.kubernetes.io/managed-by": "pulumi",
        },
        "annotations": {"pulumi.com/timeoutSeconds": "3600"},
    }


def test_the_program_leaves_the_garbage_collector_on_with_what_it_declared_frozen_out_of_its_passes() -> None:
    enabled, frozen = deploy(config()).collector
    assert enabled
    assert frozen > 10_000  # the imported modules' objects and the declared resources


def test_a_refused_program_leaves_the_garbage_collector_on_too() -> None:
    message, deployment = deploy_rejected(config(size=0))
    assert "minicluster:size" in message
    assert deployment.collector[0]


def test_job_references_secret_config_maps_and_service_by_their_output_names() -> None:
    """Renaming a dependency must flow into the Job: the names are read from the created objects."""
    deployment = deploy(config(name="flux", serviceName="flux-net"))
    pod = pod_spec(deployment)
    assert pod["subdomain"] == "flux-net"
    assert {v["name"]: v.get("configMap", v.get("secret")) for v in pod["volumes"]} == {
        "broker-config": {"name": deployment.live_name("flux-broker-config")},
        "run-config": {"name": deployment.live_name("flux-entrypoint")},
        "curve-certificate": {"secretName": deployment.live_name("flux-curve"), "defaultMode": 0o444},
        "scale": {"name": deployment.live_name("flux-scale")},
        "state": None,
        "shared-memory": None,
    }


def test_secret_and_config_maps_are_auto_named_so_a_content_change_replaces_the_job() -> None:
    """A replaced ConfigMap or Secret gets a new name; only then does the new name change the Job's pod
    template (a replace-forcing field), so no broker keeps running with a stale config or keypair."""
    deployment = deploy(config())
    for resource in [*deployment.of_type(CONFIG_MAP), deployment.one(SECRET)]:
        assert "name" not in resource.inputs["metadata"]
    assert deployment.one(JOB).inputs["metadata"]["name"] == "dev"
    assert deployment.one(SERVICE).inputs["metadata"]["name"] == "dev"


def test_local_keygen_declares_no_keygen_pod_resource() -> None:
    kinds = deploy(config(keygen="local")).kinds
    assert KEYGEN not in kinds
    assert "pulumi-python:dynamic/minicluster:LocalCurveCertificate" in kinds
