"""The keygen pod and the certificate providers, against a fake Kubernetes API (issue 4)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from components import certificate, keygen, manifests
from components.certificate import BEGIN_MARKER, END_MARKER
from components.keygen_pod import KeygenError, run_keygen_pod
from components.spec import load_spec
from tests.conftest import IMAGE, config

CERT = certificate.generate("dev-0")
GOOD_LOG = f"Saving /tmp/x/curve.cert\n{BEGIN_MARKER}\n{CERT.text()}{END_MARKER}\n"
TIMEOUT = 30.0
POLL = 2.0


def status(phase: str, *, waiting: str | None = None, exit_code: int | None = None, reason: str | None = None) -> Any:
    state = SimpleNamespace(
        waiting=SimpleNamespace(reason=waiting, message="back-off pulling image") if waiting else None,
        terminated=SimpleNamespace(exit_code=exit_code) if exit_code is not None else None,
    )
    return SimpleNamespace(phase=phase, reason=reason, container_statuses=[SimpleNamespace(state=state)])


class FakeCoreV1:
    """Enough of CoreV1Api for the keygen pod: statuses are returned in order (the last repeats)."""

    def __init__(self, *statuses: Any, log: str = GOOD_LOG, create_error: Exception | None = None) -> None:
        self.statuses = list(statuses)
        self.log = log
        self.create_error = create_error
        self.created: list[dict[str, Any]] = []
        self.deleted: list[tuple[str, str]] = []
        self.reads = 0

    def create_namespaced_pod(self, namespace: str, body: dict[str, Any]) -> Any:
        if self.create_error:
            raise self.create_error
        self.created.append(body)
        return SimpleNamespace(metadata=SimpleNamespace(name=body["metadata"]["generateName"] + "x7k2p"))

    def read_namespaced_pod(self, name: str, namespace: str) -> Any:
        self.reads += 1
        return SimpleNamespace(status=self.statuses[min(self.reads, len(self.statuses)) - 1])

    def read_namespaced_pod_log(self, name: str, namespace: str, tail_lines: int | None = None) -> str:
        lines = self.log.splitlines(keepends=True)
        return "".join(lines[-tail_lines:] if tail_lines else lines)

    def list_namespaced_event(self, namespace: str, field_selector: str) -> Any:
        assert field_selector == "involvedObject.name=dev-keygen-x7k2p"
        return SimpleNamespace(items=[SimpleNamespace(reason="FailedScheduling", message="0/3 nodes are available")])

    def delete_namespaced_pod(self, name: str, namespace: str, grace_period_seconds: int) -> None:
        self.deleted.append((namespace, name))


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


SPEC = load_spec({f"minicluster:{k}": v for k, v in config().items()}, "dev")
POD = manifests.keygen_pod(SPEC, BEGIN_MARKER, END_MARKER)


def run(api: FakeCoreV1, clock: FakeClock | None = None) -> certificate.CurveCertificate:
    clock = clock or FakeClock()
    return run_keygen_pod(api, POD, TIMEOUT, poll_interval=POLL, sleep=clock.sleep, clock=clock)


def failure(api: FakeCoreV1, clock: FakeClock | None = None) -> str:
    with pytest.raises(KeygenError) as raised:
        run(api, clock)
    assert CERT.secret_key not in str(raised.value)
    return str(raised.value)


# -- the pod --------------------------------------------------------------------------------------


def test_keygen_pod_runs_flux_keygen_once_in_the_cluster_image() -> None:
    spec = POD["spec"]
    assert POD["metadata"]["generateName"] == "dev-keygen-"
    assert spec["restartPolicy"] == "Never"
    assert spec["automountServiceAccountToken"] is False
    assert spec["activeDeadlineSeconds"] == 300
    (container,) = spec["containers"]
    assert container["image"] == IMAGE
    assert 'keygen --name="$MC_CERT_NAME"' in container["command"][2]
    assert {"name": "MC_CERT_NAME", "value": "dev-0"} in container["env"]


def test_keygen_image_is_a_setting() -> None:
    spec = load_spec({f"minicluster:{k}": v for k, v in config(keygenImage="fluxrm/flux-core:noble").items()}, "dev")
    assert manifests.keygen_pod(spec, "B", "E")["spec"]["containers"][0]["image"] == "fluxrm/flux-core:noble"


# -- success --------------------------------------------------------------------------------------


def test_success_returns_the_certificate_and_deletes_the_pod() -> None:
    api = FakeCoreV1(status("Pending"), status("Running"), status("Succeeded"))
    assert run(api) == CERT
    assert api.created == [POD]
    assert api.deleted == [("default", "dev-keygen-x7k2p")]
    assert api.reads == 3


def test_a_failed_delete_does_not_hide_the_certificate(capsys: pytest.CaptureFixture[str]) -> None:
    api = FakeCoreV1(status("Succeeded"))

    def refuse(*_: Any, **__: Any) -> None:
        raise ApiException(status=500, reason="etcd timeout")

    api.delete_namespaced_pod = refuse  # type: ignore[method-assign]
    assert run(api) == CERT
    assert "kubectl delete pod -n default dev-keygen-x7k2p" in capsys.readouterr().err


# -- failures: each says what happened and what to do, and still deletes the pod -----------------


def test_image_that_cannot_be_pulled() -> None:
    api = FakeCoreV1(status("Pending", waiting="ImagePullBackOff"))
    message = failure(api)
    assert f"cannot pull image '{IMAGE}' (ImagePullBackOff" in message
    assert api.deleted == [("default", "dev-keygen-x7k2p")]


def test_image_without_flux() -> None:
    api = FakeCoreV1(status("Failed", exit_code=127), log="/bin/sh: 3: flux: not found\n")
    assert "has no `flux` command (exit 127)" in failure(api)
    assert api.deleted


def test_failed_pod_shows_its_last_log_lines_without_key_material() -> None:
    leaked = f'flux-keygen: error\n    secret-key = "{CERT.secret_key}"\nflux-keygen: Permission denied\n'
    api = FakeCoreV1(status("Failed", exit_code=1), log=leaked)
    message = failure(api)
    assert "the keygen pod failed (exit 1)" in message
    assert "flux-keygen: Permission denied" in message
    assert "<redacted>" in message
    assert api.deleted


def test_pod_killed_by_its_deadline() -> None:
    api = FakeCoreV1(status("Failed", reason="DeadlineExceeded"), log="")
    assert "ran out of time" in failure(api)
    assert api.deleted


def test_output_that_is_not_a_certificate() -> None:
    api = FakeCoreV1(status("Succeeded"), log="hello\n")
    assert "not a usable certificate" in failure(api)
    assert api.deleted


def test_missing_namespace() -> None:
    api = FakeCoreV1(create_error=ApiException(status=404, reason="Not Found"))
    assert "namespace 'default' does not exist" in failure(api)
    assert api.deleted == []  # nothing was created


def test_unreachable_cluster() -> None:
    pool = urllib3.HTTPSConnectionPool("127.0.0.1", 6443)
    unreachable = urllib3.exceptions.MaxRetryError(pool, "/api/v1/pods", ConnectionRefusedError(111, "refused"))
    assert "cannot reach the Kubernetes cluster" in failure(FakeCoreV1(create_error=unreachable))


def test_timeout_reports_phase_and_latest_events_within_the_timeout() -> None:
    api, clock = FakeCoreV1(status("Pending")), FakeClock()
    message = failure(api, clock)
    assert "did not finish within 30s (phase Pending)" in message
    assert "FailedScheduling: 0/3 nodes are available" in message
    assert clock.now <= TIMEOUT + POLL
    assert api.deleted


# -- the providers: stable keys -------------------------------------------------------------------


def inputs(**overrides: Any) -> dict[str, Any]:
    base = {
        "namespace": "default",
        "clusterName": "dev",
        "certName": "dev-0",
        "rotation": 0,
        "pod": POD,
        "timeout": 300,
        "kubeContext": None,
        "__provider": "serialized-v1",
    }
    return {**base, **overrides}


def outputs(**overrides: Any) -> dict[str, Any]:
    return {**inputs(**overrides), "certificate": CERT.text(), "publicKey": CERT.public_key}


@pytest.mark.parametrize("news", [inputs(), inputs(__provider="serialized-v2")], ids=["same", "provider-edited"])
def test_diff_sees_no_change_for_identical_inputs_or_edited_provider_code(news: dict[str, Any]) -> None:
    diff = keygen.KeygenPodProvider().diff("id", outputs(), news)
    assert (diff.changes, diff.replaces) == (False, [])


@pytest.mark.parametrize(
    ("override", "replaces"),
    [({"namespace": "hpc"}, ["namespace"]), ({"clusterName": "x", "certName": "x-0"}, ["clusterName", "certName"]),
     ({"rotation": 1}, ["rotation"])],
)  # fmt: skip
def test_only_namespace_name_or_rotation_make_a_new_keypair(override: dict[str, Any], replaces: list[str]) -> None:
    diff = keygen.KeygenPodProvider().diff("id", outputs(), inputs(**override))
    assert (diff.changes, diff.replaces, diff.delete_before_replace) == (True, replaces, True)


def test_other_changes_update_in_place_and_keep_the_keypair() -> None:
    news = inputs(timeout=900, kubeContext="kind-flux")
    provider = keygen.KeygenPodProvider()
    diff = provider.diff("id", outputs(), news)
    assert (diff.changes, diff.replaces) == (True, [])
    updated = provider.update("id", outputs(), news).outs
    assert updated is not None
    assert (updated["certificate"], updated["publicKey"], updated["timeout"]) == (CERT.text(), CERT.public_key, 900)


def test_pod_provider_create_returns_secret_text_and_public_key(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeCoreV1(status("Succeeded"))
    monkeypatch.setattr(keygen, "_core_api", lambda context: api)
    monkeypatch.setattr("components.keygen_pod.time.sleep", lambda _: None)
    created = keygen.KeygenPodProvider().create(inputs())
    assert created.id == "default/dev/0"
    assert created.outs is not None
    assert (created.outs["certificate"], created.outs["publicKey"]) == (CERT.text(), CERT.public_key)
    assert api.deleted


def test_local_provider_makes_a_valid_pair_named_for_rank0_without_any_api() -> None:
    created = keygen.LocalKeygenProvider().create(inputs())
    assert created.outs is not None
    made = certificate.parse(created.outs["certificate"])
    assert made.name == "dev-0"
    assert made.public_key == created.outs["publicKey"]
