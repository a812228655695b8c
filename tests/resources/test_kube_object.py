"""Every Kubernetes object is declared from its builder's manifest through one class (resources/kube_object.py):
under the type the Kubernetes provider knows its kind by, with the provider release the project pins, and a
Secret's content secret, as the SDK's typed classes would declare it."""

from __future__ import annotations

from tests.conftest import config
from tests.engines.versions import PULUMI_KUBERNETES
from tests.harness import deploy
from tests.plain import is_secret

PERSISTENT = config(
    command=None, keeper={"enabled": True}, autoscale={"enabled": True, "admissionPolicy": True},
    restfulApi={"enabled": True, "secretName": "api-keys"},
)  # fmt: skip
GANG = config(scheduler={"gang": "coscheduling"}, metrics={"enabled": True, "serviceMonitor": True})
PROVIDER_TYPES = {
    "dev-curve": "kubernetes:core/v1:Secret",
    "dev-broker-config": "kubernetes:core/v1:ConfigMap",
    "dev-service": "kubernetes:core/v1:Service",
    "dev-api": "kubernetes:core/v1:Service",
    "dev-job": "kubernetes:batch/v1:Job",
    "dev-autoscaler-service-account": "kubernetes:core/v1:ServiceAccount",
    "dev-autoscaler-role": "kubernetes:rbac.authorization.k8s.io/v1:Role",
    "dev-autoscaler-role-binding": "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
    "dev-autoscaler-admission-policy": "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
    "dev-autoscaler-admission-binding": "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding",
    "dev-keeper": "kubernetes:apps/v1:Deployment",
    "dev-pod-group": "kubernetes:scheduling.x-k8s.io/v1alpha1:PodGroup",
    "dev-service-monitor": "kubernetes:monitoring.coreos.com/v1:ServiceMonitor",
}


def test_each_kind_is_declared_as_the_provider_knows_it() -> None:
    declared = {resource.name: resource.typ for config in (PERSISTENT, GANG) for resource in deploy(config).resources}
    assert {name: declared.get(name) for name in PROVIDER_TYPES} == PROVIDER_TYPES


def test_every_object_asks_for_the_provider_release_the_project_pins() -> None:
    for deployment in (deploy(PERSISTENT), deploy(GANG)):
        objects = [resource.name for resource in deployment.resources if resource.typ.startswith("kubernetes:")]
        assert {deployment.options[name]["version"] for name in objects} == {PULUMI_KUBERNETES}


def test_a_secrets_content_is_secret_in_and_out_and_nothing_else_is() -> None:
    deployment = deploy(config())
    assert deployment.options["dev-curve"]["additionalSecretOutputs"] == ["data", "stringData"]
    assert is_secret(next(r for r in deployment.resources if r.name == "dev-curve").inputs["stringData"])
    assert deployment.options["dev-broker-config"]["additionalSecretOutputs"] == []
    assert not is_secret(next(r for r in deployment.resources if r.name == "dev-broker-config").inputs["data"])
