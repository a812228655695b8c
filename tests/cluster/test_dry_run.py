"""Every object through a server-side dry run before anything is created (issue 22): the real client
against the API stand-in, which validates built-in kinds by their schema, knows which CRDs exist, runs
webhooks, and stores nothing (it answers 501 to a create that is not a dry run)."""

from __future__ import annotations

from typing import Any

from flux_minicluster.cluster import admission
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.harness import OWNER, deploy_rejected
from tests.kube_api import Cluster
from tests.kube_api.samples import FOUR

Json = dict[str, Any]


def verdict(secret_keys: tuple[str, ...] = (), preview: bool = False, **overrides: Any) -> admission.Verdict:
    raw = {f"minicluster:{k}": v for k, v in config(**overrides).items()}
    spec = load_spec(raw, "dev", [f"minicluster:{key}" for key in secret_keys])
    return admission.check(spec, Access(), OWNER, preview=preview)


def created(api: Cluster) -> list[tuple[str, Json]]:
    return [
        (path, body) for method, path, body in api.requests if method == "POST" and body and not path.endswith("/pods")
    ]


def test_every_object_is_judged_by_the_api_server_and_none_is_stored(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    found = verdict()
    assert (found.refused, found.warnings) == (None, [])
    kinds = sorted((body["kind"], path.rsplit("/", 1)[1]) for path, body in created(kube_api))
    assert kinds == [("ConfigMap", "configmaps")] * 3 + [
        ("Job", "jobs"),
        ("Secret", "secrets"),
        ("Service", "services"),
    ]


def test_the_autoscalers_service_account_role_and_binding_are_judged_too(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    found = verdict(command=None, size=1, maxSize=4, autoscale={"enabled": True})
    assert (found.refused, found.warnings) == (None, [])
    kinds = {(body["kind"], path.rsplit("/", 2)[-2]) for path, body in created(kube_api)}
    assert {("ServiceAccount", "default"), ("Role", "default"), ("RoleBinding", "default")} <= kinds
    assert {path for path, body in created(kube_api) if body["kind"] in ("Role", "RoleBinding")} == {
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
    }


def test_the_keepers_deployment_account_role_and_binding_are_judged_too(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    assert verdict(command=None, keeper={"enabled": True}) == admission.Verdict()
    kinds = {body["kind"] for path, body in created(kube_api)}
    assert {"Deployment", "ServiceAccount", "Role", "RoleBinding"} <= kinds


def test_secret_values_are_never_sent(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    assert verdict(secret_keys=("environment",), environment={"TOKEN": "s3cret-value"}).refused is None
    sent = [body for path, body in created(kube_api) if body["kind"] == "Secret"]
    assert len(sent) == 2 and "s3cret-value" not in str(sent) and "secret-key" not in str(sent)


def test_the_dry_runs_are_sent_side_by_side(kube_api: Cluster) -> None:
    """Each waits for the API server: a remote one's round trips would add up one after another."""
    kube_api.nodes = FOUR
    kube_api.fail("POST", r"/(configmaps|services|jobs|pods)$", delay=0.5)  # late, then answered
    assert verdict() == admission.Verdict()
    assert kube_api.most_delayed >= 4


def test_the_cluster_is_read_side_by_side(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    kube_api.fail("GET", r"/(nodes|pods|resourcequotas)$", delay=0.5)
    assert verdict() == admission.Verdict()
    assert kube_api.most_delayed == 3


def test_a_webhook_that_denies_an_object_stops_pulumi_up_before_anything_is_created(kube_api: Cluster) -> None:
    kube_api.webhooks.append(lambda obj: "jobs need the label team" if obj["kind"] == "Job" else None)
    message, deployment = deploy_rejected(config(admission="warn"))
    assert message == (
        "the API server refuses MiniCluster 'dev' (a dry run):\n"
        "  - the Job 'dev': admission webhook \"policy.example.com\" denied the request: jobs need the label team\n"
        "Nothing was created."
    )
    assert deployment.resources == []


def test_what_the_api_server_finds_invalid_is_refused_in_its_words(kube_api: Cluster) -> None:
    invalid = 'Service "dev" is invalid: spec.ports[0].port: Invalid value: 8050: provided port is already allocated'
    kube_api.fail("POST", "/services$", 422, invalid)
    assert (
        verdict().refused
        == f"the API server refuses MiniCluster 'dev' (a dry run):\n  - the Service 'dev': {invalid}\nNothing was created."
    )


def test_a_gang_whose_podgroup_kind_is_not_installed_is_refused(kube_api: Cluster) -> None:
    found = verdict(scheduler={"gang": "volcano"})
    assert found.refused is not None
    assert (
        "the cluster has no PodGroup of scheduling.volcano.sh/v1beta1 (its CRD is not installed): install volcano, or unset minicluster:scheduler"
        in found.refused
    )


def test_a_gang_whose_podgroup_kind_is_installed_goes_ahead(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    kube_api.crds.add("scheduling.x-k8s.io/v1alpha1/podgroups")
    assert verdict(scheduler={"gang": "coscheduling"}) == admission.Verdict()
    assert ("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups", "PodGroup") in [
        (path, body["kind"]) for path, body in created(kube_api)
    ]


def test_a_namespace_that_does_not_exist_is_refused_once(kube_api: Cluster) -> None:
    found = verdict(namespace="hpc")
    assert found.refused == (
        "the API server refuses MiniCluster 'dev' (a dry run):\n"
        "  - namespace 'hpc' does not exist: create it, or set minicluster:namespace\n"
        "Nothing was created."
    )


def test_a_namespace_being_deleted_is_refused_once(kube_api: Cluster) -> None:
    """`kubectl delete namespace` returns before the namespace is gone; a `pulumi up` right after it finds
    every object refused alike, by the API server's NamespaceLifecycle admission."""
    kube_api.terminating.add("default")
    found = verdict()
    assert found.refused == (
        "the API server refuses MiniCluster 'dev' (a dry run):\n"
        "  - namespace 'default' is being deleted, and the API server takes nothing new in it: once it is gone, "
        "create it again, or set minicluster:namespace\n"
        "Nothing was created."
    )


def test_in_a_preview_a_namespace_that_does_not_exist_yet_is_left_to_pulumi_up(kube_api: Cluster) -> None:
    # A program may make the namespace (a Namespace resource whose name the MiniCluster takes): the
    # preview runs before it exists, and `pulumi up` checks again once it does.
    found = verdict(namespace="hpc", preview=True)
    assert found.refused is None
    assert found.warnings == [
        "admission check left to `pulumi up`: namespace 'hpc' does not exist yet. If this program makes it, "
        "`pulumi up` checks the MiniCluster once it is there; if not, `pulumi up` refuses it before anything is "
        "created (create the namespace, or set minicluster:namespace)"
    ]


def test_in_a_preview_any_other_refusal_stands(kube_api: Cluster) -> None:
    found = verdict(preview=True, scheduler={"gang": "volcano"})
    assert found.refused is not None and "the cluster has no PodGroup" in found.refused


# -- admission policies judge the pods: before anything is created, whatever minicluster:admission says --


def test_a_namespace_that_enforces_pod_security_stops_pulumi_up_before_anything_is_created(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    kube_api.pod_security["default"] = "restricted"
    message, deployment = deploy_rejected(config(admission="warn"))
    lines = message.splitlines()
    assert lines[0] == "the API server refuses MiniCluster 'dev' (a dry run):"
    assert lines[1].startswith("  - an admission policy of namespace 'default' refuses the broker pods: pods "
                               '"dev-admission" is forbidden: violates PodSecurity "restricted:latest": ')  # fmt: skip
    assert lines[2].startswith("  - an admission policy of namespace 'default' refuses the keygen pod: pods ")
    assert lines[3:] == [
        "  - the namespace enforces a Pod Security Standard: minicluster:securityProfile restricted makes every pod "
        "the MiniCluster creates satisfy the restricted one",
        "Nothing was created.",
    ]
    assert "does not fit" not in message and "autoscaler" not in message and "access denied" not in message
    assert deployment.resources == []


def test_with_security_profile_restricted_that_namespace_takes_every_pod(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    kube_api.pod_security["default"] = "restricted"
    assert verdict(securityProfile="restricted") == admission.Verdict()
    dry_run_pods = [
        body for method, path, body in kube_api.requests if method == "POST" and path.endswith("/pods") and body
    ]
    assert sorted(pod["metadata"].get("name", pod["metadata"].get("generateName")) for pod in dry_run_pods) == [
        "dev-admission", "dev-admission", "dev-keygen-",
    ]  # fmt: skip  # the broker pod (the dry run, then the room's), the keygen pod


def test_a_webhook_that_denies_the_keygen_pod_stops_pulumi_up(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    denial = 'admission webhook "validation.gatekeeper.sh" denied the request: [allowed-repos] image not allowed'
    kube_api.fail("POST", "/pods$", 403, denial)
    found = verdict()
    assert found.refused is not None
    assert f"  - an admission policy of namespace 'default' refuses the keygen pod: {denial}\n" in found.refused
    assert "securityProfile" not in found.refused


def test_a_quota_that_refuses_a_pod_is_left_to_the_room_check(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    kube_api.fail("POST", "/pods$", 403, 'pods "dev-admission" is forbidden: exceeded quota: compute, requested: cpu=4')
    found = verdict(admission="warn")
    assert found.refused is None
    (warning,) = found.warnings
    assert warning.startswith("MiniCluster 'dev' does not fit the cluster as it is:")


def test_without_the_right_to_dry_run_it_says_so_and_goes_on_to_the_room(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    kube_api.fail(
        "POST", "/secrets$", 403, 'secrets is forbidden: User "dev" cannot create resource "secrets" in API group ""'
    )
    found = verdict()
    assert found.refused is None
    (warning,) = found.warnings
    assert warning.startswith(
        'dry run skipped: access denied (403: secrets is forbidden: User "dev" cannot create resource'
    )
    assert any(path.endswith("/pods") for _, path, _ in kube_api.requests)  # the room was still judged


def test_the_admission_policy_on_a_cluster_without_its_api_is_refused_by_key(kube_api: Cluster) -> None:
    """The stand-in serves no admissionregistration.k8s.io/v1, as a cluster older than 1.30 does not."""
    kube_api.nodes = FOUR
    found = verdict(command=None, size=1, maxSize=4, autoscale={"enabled": True, "admissionPolicy": True})
    assert found.refused is not None
    assert (
        "minicluster:autoscale.admissionPolicy: the cluster has no ValidatingAdmissionPolicy of "
        "admissionregistration.k8s.io/v1 (Kubernetes 1.30 or newer has it): upgrade the cluster, or unset "
        "minicluster:autoscale.admissionPolicy"
    ) in found.refused
    assert found.refused.endswith("Nothing was created.")
