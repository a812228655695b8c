"""Every Kubernetes object is declared from its builder's manifest through one class (resources/kube_object.py):
under the type the Kubernetes provider knows its kind by, with the provider release the project pins, and a
Secret's content secret, as the SDK's typed classes would declare it."""

from __future__ import annotations

from flux_minicluster.builders.names import AUTO_NAMED_KINDS
from flux_minicluster.builders.names import OWNER as OWNER_ANNOTATION
from tests.conftest import config
from tests.engines.versions import PULUMI_KUBERNETES
from tests.harness import OWNER, deploy
from tests.plain import is_secret, plain

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


def test_every_object_that_keeps_its_name_records_the_stack_that_declares_it() -> None:
    """The dry run tells this stack's objects from another's by it (tests/cluster/test_taken_names.py)."""
    declared = [
        plain(r.inputs) for config in (PERSISTENT, GANG) for r in deploy(config).resources
        if r.typ.startswith("kubernetes:")
    ]  # fmt: skip
    named = [obj for obj in declared if obj["kind"] not in AUTO_NAMED_KINDS]
    assert {obj["kind"] for obj in named} == {kind.rsplit(":", 1)[1] for kind in PROVIDER_TYPES.values()} - {
        "Secret", "ConfigMap"
    }  # fmt: skip
    assert all(obj["metadata"]["annotations"][OWNER_ANNOTATION] == OWNER for obj in named)
    auto_named = [obj for obj in declared if obj["kind"] in AUTO_NAMED_KINDS]
    assert auto_named and all("name" not in obj["metadata"] for obj in auto_named)
    assert all(OWNER_ANNOTATION not in obj["metadata"].get("annotations", {}) for obj in auto_named)


def test_the_jobs_pods_do_not_record_it() -> None:
    """On the Job's own metadata only: a new annotation in its pod template would replace a running Job."""
    job = next(plain(r.inputs) for r in deploy(PERSISTENT).resources if r.typ == "kubernetes:batch/v1:Job")
    assert OWNER_ANNOTATION not in job["spec"]["template"]["metadata"].get("annotations", {})
