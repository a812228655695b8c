"""One wording per kind of failed request (kube.describe), whoever made the request."""

from __future__ import annotations

import pytest

from flux_minicluster.cluster import kube

DOING = {"doing": "creating the keygen pod", "namespace": "hpc", "needs": "create on pods", "context": "--context"}


@pytest.mark.parametrize(
    ("kind", "status", "expected"),
    [
        ("unreachable", None, "cannot reach the Kubernetes cluster at https://k:6443 (Connection refused) while "
         "creating the keygen pod; check `kubectl cluster-info` and --context"),
        ("server-error", 503, "the Kubernetes API server failed (503: Connection refused) while creating the "
         "keygen pod"),
        ("denied", 403, "access denied (403: Connection refused) while creating the keygen pod in namespace 'hpc': "
         "this needs create on pods there (check your RBAC)"),
        ("conflict", 409, "the Kubernetes API refused the request (409: Connection refused) while creating the "
         "keygen pod"),
        ("client-side", None, "the Kubernetes client refused the request (Connection refused) while creating the "
         "keygen pod: this is a bug in the MiniCluster program; please report it with this message"),
    ],
)  # fmt: skip
def test_each_kind_has_one_wording(kind: kube.Kind, status: int | None, expected: str) -> None:
    found = kube.ApiProblem(kind, status, "Connection refused")
    assert kube.describe(found, **DOING, host="https://k:6443" if kind == "unreachable" else "") == expected


def test_a_stacks_request_points_at_the_stack_settings_that_pick_its_cluster() -> None:
    """A stack picks its cluster by kubernetes:context, or by a kubeconfig of its own (a file, or text)."""
    found = kube.ApiProblem("unreachable", None, "Connection refused")
    assert kube.describe(found, doing="sending the Job as a dry run") == (
        "cannot reach the Kubernetes cluster (Connection refused) while sending the Job as a dry run; check "
        "`kubectl cluster-info` and the stack's kubernetes:context and kubernetes:kubeconfig settings"
    )


def test_a_provider_failure_is_the_same_words_for_what_it_was_doing() -> None:
    error = kube.NoCluster("no kubeconfig")
    assert str(kube.failure("reading the Job's size", error)) == (
        "cannot reach the Kubernetes cluster while reading the Job's size: no kubeconfig"
    )


@pytest.mark.parametrize(
    ("status", "detail"),
    [
        (403, 'pods "dev-keygen-x1" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true'),
        (400, 'admission webhook "validate.kyverno.svc-fail" denied the request: resource Pod/hpc/x was blocked'),
        (403, 'admission webhook "validation.gatekeeper.sh" denied the request: [allowed-repos] image not allowed'),
    ],
)
def test_a_refusal_that_names_a_policy_is_a_policys_never_missing_rights(status: int, detail: str) -> None:
    found = kube.ApiProblem("denied" if status == 403 else "rejected", status, detail)
    assert kube.describe(found, **DOING) == (
        f"an admission policy in namespace 'hpc' refuses it ({status}: {detail}) while creating the keygen pod"
    )


def test_an_rbac_denial_is_still_missing_rights() -> None:
    found = kube.ApiProblem("denied", 403, 'pods is forbidden: User "dev" cannot create resource "pods"')
    assert kube.describe(found, **DOING).startswith("access denied (403: ")
