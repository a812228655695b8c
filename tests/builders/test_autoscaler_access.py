"""Who holds the autoscaler's token (issue 39): the broker pods mount none at pod level, and the
autoscaler's own native sidecar alone mounts a projected one; autoscale.admissionPolicy's
ValidatingAdmissionPolicy and binding, declared before the Job, name what was created."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.builders import admission_policy
from flux_minicluster.builders.names import AUTOSCALER_CONTAINER, BROKER_CONTAINER
from flux_minicluster.config import paths
from tests.config.test_autoscale_config import AUTOSCALED, containers, objects, pod_spec, spec_of
from tests.conftest import config
from tests.harness import deploy
from tests.plain import plain
from tests.schemas import SUPPORTED, assert_conforms

POLICY = {**AUTOSCALED, "autoscale": {"enabled": True, "admissionPolicy": True}}
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
VAP_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
WITH_VAP = [version for version in SUPPORTED if tuple(map(int, version.split(".")[:2])) >= (1, 30)]


def mounts(container: dict[str, Any]) -> dict[str, str]:
    return {mount["mountPath"]: mount["name"] for mount in container.get("volumeMounts", [])}


def test_no_container_but_the_autoscalers_mounts_a_token() -> None:
    found = objects()
    assert pod_spec(found)["automountServiceAccountToken"] is False
    token_holders = [name for name, c in containers(found).items() if paths.SERVICE_ACCOUNT_DIR in mounts(c)]
    assert token_holders == [AUTOSCALER_CONTAINER]
    assert mounts(containers(found)[AUTOSCALER_CONTAINER])[paths.SERVICE_ACCOUNT_DIR] == "autoscaler-token"


def test_the_token_is_projected_as_kubernetes_projects_its_own() -> None:
    volumes = {volume["name"]: volume for volume in pod_spec(objects())["volumes"]}
    assert volumes["autoscaler-token"]["projected"]["sources"] == [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]  # fmt: skip


def test_the_autoscaler_is_a_native_sidecar_of_the_clusters_image_that_reaches_the_brokers_socket() -> None:
    autoscaler = containers(objects())[AUTOSCALER_CONTAINER]
    assert (autoscaler["image"], autoscaler["restartPolicy"]) == (spec_of().image, "Always")
    assert autoscaler["command"] == ["/bin/bash", "/etc/minicluster/run/autoscaler.sh"]
    assert mounts(autoscaler)[paths.STATE_DIR] == paths.STATE_VOLUME_OF_POD  # the broker's socket is there
    assert paths.LOCAL_URI.removeprefix("local://").startswith(paths.STATE_DIR + "/")


def test_the_autoscaler_starts_after_the_flux_view_it_runs_flux_from() -> None:
    pod = pod_spec(objects(fluxView={"enabled": True}))
    assert [container["name"] for container in pod["initContainers"]] == [paths.FLUX_VIEW, AUTOSCALER_CONTAINER]


def test_under_restricted_pod_security_the_autoscaler_is_restricted_too() -> None:
    autoscaler = containers(objects(securityProfile="restricted"))[AUTOSCALER_CONTAINER]
    assert autoscaler["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def test_a_stack_that_names_its_own_account_keeps_kubernetes_default_mount() -> None:
    found = objects(pod={"serviceAccountName": "flux-runner"})
    assert "automountServiceAccountToken" not in pod_spec(found)  # Kubernetes' default: every container
    assert pod_spec(found)["serviceAccountName"] == "flux-runner"


def test_without_the_policy_there_is_none() -> None:
    assert admission_policy.objects(spec_of(), "dev-scale-0123abcd") == []


def test_the_policy_binds_the_autoscalers_account_to_its_own_job_and_scale_config_map() -> None:
    found = objects(autoscale=POLICY["autoscale"])
    policy = found["ValidatingAdmissionPolicy"]
    assert policy["metadata"]["name"] == found["ValidatingAdmissionPolicyBinding"]["spec"]["policyName"]
    assert policy["metadata"]["name"] == "minicluster-autoscaler.default.dev"
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert [(rule["resources"], rule["resourceNames"], rule["operations"]) for rule in rules] == [
        (["jobs"], ["dev"], ["UPDATE"]), (["configmaps"], [found["ConfigMap"]["metadata"]["name"]], ["UPDATE"]),
    ]  # fmt: skip
    assert policy["spec"]["matchConditions"][0]["expression"] == (
        "request.userInfo.username == 'system:serviceaccount:default:dev-autoscaler'"
    )
    assert found["ValidatingAdmissionPolicyBinding"]["spec"]["validationActions"] == ["Deny"]


@pytest.mark.parametrize("version", [WITH_VAP[0], WITH_VAP[-1]])
def test_the_policy_objects_conform_to_kubernetes(version: str) -> None:
    found = objects(autoscale=POLICY["autoscale"])
    for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        assert_conforms(found[kind], version)


def test_pulumi_up_declares_the_policy_before_the_job_with_the_created_scale_config_maps_name() -> None:
    deployment = deploy(config(**POLICY))
    policy, binding = deployment.one(VAP), deployment.one(VAP_BINDING)
    job = deployment.one("kubernetes:batch/v1:Job")
    assert {deployment.urn(policy), deployment.urn(binding)} <= set(deployment.options[job.name]["dependencies"])
    rules = plain(policy.inputs)["spec"]["matchConstraints"]["resourceRules"]
    assert rules[1]["resourceNames"] == [deployment.live_name("dev-scale")]
    assert {BROKER_CONTAINER} == {c["name"] for c in plain(job.inputs)["spec"]["template"]["spec"]["containers"]}


def test_the_autoscaler_gets_no_secret_of_the_flux_container() -> None:
    found = objects(restfulApi={"enabled": True, "secretName": "api"}, environment={"A": "b"})
    autoscaler = {item["name"] for item in containers(found)[AUTOSCALER_CONTAINER]["env"]}
    flux = {item["name"] for item in containers(found)[BROKER_CONTAINER]["env"]}
    assert {"FLUX_TOKEN", "FLUX_SECRET_KEY", "A"} <= flux
    assert not {"FLUX_USER", "FLUX_TOKEN", "FLUX_SECRET_KEY", "A"} & autoscaler


def test_the_autoscaler_mounts_the_flux_view_as_the_flux_container_does() -> None:
    found = containers(objects(fluxView={"enabled": True}, securityProfile="restricted"))
    view = [m for m in found[BROKER_CONTAINER]["volumeMounts"] if m["name"] == paths.FLUX_VIEW]
    assert len(view) == 2  # the view, and its software where its links point
    assert [m for m in found[AUTOSCALER_CONTAINER]["volumeMounts"] if m["name"] == paths.FLUX_VIEW] == view
