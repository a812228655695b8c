"""securityProfile restricted in a namespace that enforces Pod Security's restricted level, judged by the
real API server's PodSecurity admission: the plain stack is refused by the dry run before anything is
created; the restricted one is admitted, and its Job completes with its pods on real Flux."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from flux_minicluster.cluster import admission
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.engines.control_plane import ControlPlane
from tests.kubelet.pod import wait_until
from tests.realengine.on_node import OnNode

ENFORCED = {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}
pytestmark = pytest.mark.namespace_labels(ENFORCED)


def test_the_plain_stack_is_refused_before_anything_is_created(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    raw = config(namespace=namespace)
    verdict = admission.check(load_spec({f"minicluster:{k}": v for k, v in raw.items()}, "dev"), None)
    assert verdict.refused is not None
    assert f"an admission policy of namespace {namespace!r} refuses the broker pods" in verdict.refused
    assert 'violates PodSecurity "restricted:latest"' in verdict.refused
    assert "minicluster:securityProfile restricted makes every pod" in verdict.refused
    assert client.BatchV1Api(admin).list_namespaced_job(namespace).items == []


@pytest.mark.realflux
def test_the_restricted_stack_is_admitted_and_its_job_completes(on_node: Callable[..., OnNode]) -> None:
    cluster = on_node(securityProfile="restricted", size=2, tasks=2, command="id -u")
    wait_until(lambda: cluster.condition("Complete") == "True", "the Job to complete", 90, poll=0.3)
    assert sorted(pod.status.phase for pod in cluster.pods()) == ["Succeeded"] * 2
    assert [line for line in cluster.rank0.log.splitlines() if line == "1000"] == ["1000", "1000"]
