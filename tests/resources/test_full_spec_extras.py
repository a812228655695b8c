"""The stack's Flux extras as the program renders them on mocks: the flux view, the RESTful API and
the state volume (the other keys: tests/resources/test_full_spec.py)."""

from __future__ import annotations

import json
import tomllib

from tests.conftest import config
from tests.harness import await_annotations, deploy
from tests.plain import plain
from tests.resources.test_full_spec import SCRATCH, SERVICE, SIDECAR, containers, data, flux_container, job_of, pod_of

# -- flux view ------------------------------------------------------------------------------------


def test_flux_view_copies_flux_in_with_an_init_container_and_tells_the_entrypoint() -> None:
    deployment = deploy(
        config(fluxView={"enabled": True, "image": "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"})
    )
    spec = pod_of(deployment)["spec"]
    (init,) = spec["initContainers"]
    assert init["image"] == "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"
    assert "/opt/views/._view/" in init["command"][2]
    assert init["volumeMounts"] == [{"name": "flux-view", "mountPath": "/mnt/flux"}]
    assert {"name": "flux-view", "emptyDir": {}} in spec["volumes"]
    broker = containers(deployment)["flux-broker"]
    assert {"name": "flux-view", "mountPath": "/mnt/flux"} in broker["volumeMounts"]
    assert {"name": "MC_FLUX_VIEW", "value": "/mnt/flux"} in broker["env"]


def test_flux_view_serves_the_keygen_pod_too() -> None:
    keygen = deploy(config(fluxView={"enabled": True})).one("pulumi-python:dynamic/minicluster:CurveCertificate")
    pod = json.loads(keygen.inputs["pod"])["spec"]
    assert pod["initContainers"][0]["image"] == "ghcr.io/converged-computing/flux-view-rocky:tag-9"
    assert {"name": "MC_FLUX_VIEW", "value": "/mnt/flux"} in pod["containers"][0]["env"]


def test_the_keygen_container_sees_the_views_software_where_its_links_point() -> None:
    """Found on the real node: the view's `flux` links into /opt/software, which the keygen pod lacked."""
    keygen = deploy(config(fluxView={"enabled": True})).one("pulumi-python:dynamic/minicluster:CurveCertificate")
    mounts = json.loads(keygen.inputs["pod"])["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "flux-view", "mountPath": "/opt/software", "subPath": "software", "readOnly": True} in mounts


def test_without_flux_view_there_is_no_init_container() -> None:
    assert "initContainers" not in pod_of(deploy(config()))["spec"]


# -- RESTful API ----------------------------------------------------------------------------------

API = {"restfulApi": {"enabled": True, "secretName": "flux-api-creds"}, "command": None}


def test_restful_api_gets_a_service_on_rank0_only() -> None:
    deployment = deploy(config(**API))
    api = next(plain(s.inputs) for s in deployment.of_type(SERVICE) if s.name == "dev-api")
    assert api["metadata"]["name"] == "dev-api"
    assert api["spec"]["selector"]["batch.kubernetes.io/job-completion-index"] == "0"
    assert api["spec"]["selector"]["app.kubernetes.io/component"] == "broker"
    assert api["spec"]["ports"] == [{"name": "restful-api", "port": 5000, "targetPort": 5000, "protocol": "TCP"}]
    assert deployment.outputs["apiServiceName"] == "dev-api"


def test_the_api_service_is_not_awaited_the_scale_waits_for_rank0_with_every_broker() -> None:
    """The provider's await of a Service with a selector ends 10 s after its Endpoints last changed."""
    deployment = deploy(config(**API))
    api = next(plain(s.inputs) for s in deployment.of_type(SERVICE) if s.name == "dev-api")
    assert await_annotations(api) == {"pulumi.com/skipAwait": "true"}
    assert "pulumi-python:dynamic/minicluster:Scale" in deployment.kinds


def test_restful_api_credentials_come_from_the_users_secret_only() -> None:
    env = {e["name"]: e for e in flux_container(**API)["env"]}
    assert env["FLUX_USER"]["valueFrom"] == {"secretKeyRef": {"name": "flux-api-creds", "key": "user"}}
    assert env["FLUX_TOKEN"]["valueFrom"] == {"secretKeyRef": {"name": "flux-api-creds", "key": "token"}}
    assert env["FLUX_SECRET_KEY"]["valueFrom"] == {"secretKeyRef": {"name": "flux-api-creds", "key": "secret-key"}}
    assert (env["FLUX_AUTH_BACKEND"]["value"], env["MC_RESTFUL_PORT"]["value"]) == ("shared-secret", "5000")


def test_restful_api_port_is_declared_on_the_container_and_the_cluster_is_elastic() -> None:
    deployment = deploy(config(**API))
    assert {"name": "restful-api", "containerPort": 5000, "protocol": "TCP"} in containers(deployment)["flux-broker"][
        "ports"
    ]
    assert await_annotations(job_of(deployment)) == {"pulumi.com/skipAwait": "true"}
    assert "pulumi-python:dynamic/minicluster:Scale" in deployment.kinds


def test_without_the_api_there_is_no_api_service_or_output() -> None:
    deployment = deploy(config())
    assert [s.name for s in deployment.of_type(SERVICE)] == ["dev-service"]
    assert "apiServiceName" not in deployment.outputs


# -- the state volume (issue 13) ------------------------------------------------------------------

KEPT = {"command": None, "stateVolume": {"claimName": "flux-state"}}


def test_the_state_volume_is_mounted_in_the_flux_container_for_rank0s_statedir() -> None:
    deployment = deploy(config(**KEPT, volumes=SCRATCH, containers=[{**SIDECAR, "volumes": ["scratch"]}]))
    spec = pod_of(deployment)["spec"]
    assert {"name": "flux-state", "persistentVolumeClaim": {"claimName": "flux-state"}} in spec["volumes"]
    broker = containers(deployment)["flux-broker"]
    assert {"name": "flux-state", "mountPath": "/var/lib/minicluster-state"} in broker["volumeMounts"]
    assert {"name": "MC_STATE_VOLUME", "value": "/var/lib/minicluster-state"} in broker["env"]
    sidecar = containers(deployment)["metrics"]
    assert all(mount["name"] != "flux-state" for mount in sidecar["volumeMounts"])  # rank 0's broker only


def test_the_state_volume_checkpoints_the_kvs_so_a_killed_rank0_loses_little() -> None:
    broker_toml = tomllib.loads(data(deploy(config(**KEPT)), "dev-broker-config")["broker.toml"])
    assert broker_toml["kvs"] == {"checkpoint-period": "30s"}


def test_without_a_state_volume_rank0s_state_stays_in_the_pod() -> None:
    deployment = deploy(config(command=None))
    broker = containers(deployment)["flux-broker"]
    assert all(mount["name"] != "flux-state" for mount in broker["volumeMounts"])
    assert {"name": "MC_STATE_VOLUME", "value": ""} in broker["env"]  # set, and empty: none
    assert "kvs" not in tomllib.loads(data(deployment, "dev-broker-config")["broker.toml"])


def test_a_one_node_cluster_may_keep_its_state_in_a_host_path() -> None:
    spec = pod_of(deploy(config(command=None, size=1, stateVolume={"hostPath": "/srv/flux"})))["spec"]
    assert {"name": "flux-state", "hostPath": {"path": "/srv/flux", "type": "DirectoryOrCreate"}} in spec["volumes"]


def test_a_read_write_once_claim_works_when_every_pod_is_pinned_to_one_node() -> None:
    pinned = {"nodeSelector": {"kubernetes.io/hostname": "big-node"}}
    volume = {"claimName": "flux-state", "accessMode": "ReadWriteOnce"}
    spec = pod_of(deploy(config(command=None, pod=pinned, stateVolume=volume)))["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "big-node"}
    assert {"name": "flux-state", "persistentVolumeClaim": {"claimName": "flux-state"}} in spec["volumes"]
