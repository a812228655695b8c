"""The keygen pod when the API server or the connection says no (refusals, no answer, no room), with the
real `kubernetes` client against the API stand-in, which can fail on demand; what the pod itself did is
tests/cluster/test_keygen_pod.py, and a missing namespace and RBAC's refusals, as the real API server says them,
tests/realengine/test_keygen_pod_refusals.py."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.test_keygen_pod import CERT, POD, deleted, failure, holding, run
from tests.kube_api import Cluster, Step, refused_url, running, unschedulable, write_kubeconfig

# -- what the API server said ---------------------------------------------------------------------


@pytest.mark.parametrize(("status", "said"), [(409, 'pods "dev-keygen-x" already exists'),
                                              (500, "etcdserver: leader changed")])  # fmt: skip
def test_other_refusals_are_reported_as_refusals_with_the_servers_message(
    kube_api: Cluster, status: int, said: str
) -> None:
    kube_api.fail("POST", "/pods$", status, said)
    message = failure()
    assert f"({status}: {said}) while creating the keygen pod" in message
    assert "cannot reach" not in message


def test_a_pod_the_api_server_cannot_decode_is_refused_with_the_field_it_names(kube_api: Cluster) -> None:
    """The keygen pod is sent as plain JSON (no typed client to refuse it first): the API server's own
    decoding is the check, and nothing is created."""
    broken = json.loads(json.dumps(POD))
    broken["spec"]["activeDeadlineSeconds"] = 300.0  # what the engine's wire made of it before issue 10
    message = failure(pod=broken)
    assert "the Kubernetes API refused the request (400: " in message
    assert "spec.activeDeadlineSeconds: 300.0 is not of type 'integer'" in message
    assert message.endswith("while creating the keygen pod")
    assert kube_api.pods == {}


def test_the_stand_in_decodes_as_strictly_as_the_api_server(kube_api: Cluster) -> None:
    """The API server refuses 300.0 for an integer field, and so does the stand-in."""
    body = json.loads(json.dumps(POD))
    body["metadata"]["name"] = "direct"
    body["spec"]["activeDeadlineSeconds"] = 300.0
    request = urllib.request.Request(
        f"{kube_api.url}/api/v1/namespaces/default/pods", json.dumps(body).encode(), method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    assert refused.value.code == 400
    assert "spec.activeDeadlineSeconds: 300.0 is not of type 'integer'" in json.loads(refused.value.read())["message"]


# -- the connection -------------------------------------------------------------------------------


def test_connection_refused(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "config", {"gone": refused_url()})))
    message = failure()
    assert "cannot reach the Kubernetes cluster (Connection refused) while creating the keygen pod" in message
    assert "kubernetes:context" in message


def test_an_api_server_that_answers_too_slowly(kube_api: Cluster) -> None:
    kube_api.fail("POST", "/pods$", delay=4)
    message = failure(request_timeout=(0.5, 0.5))
    assert (
        "cannot reach the Kubernetes cluster (the API server did not answer in time) while creating the keygen pod"
        in message
    )
    # It gave up at its own 0.5 s: the server would have created the pod after 4 s.


def test_a_pod_the_scheduler_cannot_place_fails_at_the_schedule_timeout(kube_api: Cluster) -> None:
    kube_api.kubelet = lambda _pod: [Step(0.02, status=unschedulable("0/3 nodes are available: 3 Insufficient cpu."))]
    message = failure(timeout=10, schedule_timeout=0.5)  # the schedule timeout, not the 10 s keygenTimeout
    assert message == (
        "the keygen pod could not be scheduled for 0.5s (minicluster:scheduleTimeout): "
        "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu."
    )
    assert len(deleted(kube_api)) == 1


def test_a_pod_that_is_placed_in_time_is_not_stopped(kube_api: Cluster, tmp_path: Path) -> None:
    kube_api.kubelet = lambda _pod: [
        Step(0.02, status=unschedulable("0/3 nodes are available: 3 Insufficient cpu.")),
        Step(0.2, node="node-1", status=running()),  # an autoscaler added a node
    ]
    holding(CERT.text(), kube_api, tmp_path, after=0.6)
    assert run(timeout=10, schedule_timeout=0.5) == CERT
