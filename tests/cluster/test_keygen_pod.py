"""The keygen pod, run with the real `kubernetes` client against the local API stand-in (issue 10).

Each test arranges what the API server and its kubelet do, and checks what the user is told. The
certificate never appears in a message, and the pod is deleted whatever happened.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.builders import keygen
from flux_minicluster.cluster import api_calls, keygen_pod, kube
from flux_minicluster.cluster.keygen_pod import KeygenError, run_keygen_pod
from flux_minicluster.cluster.waiting import Progress
from flux_minicluster.config import certificate, paths
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.paths import FLUX_VIEW
from tests.conftest import IMAGE, config
from tests.kube_api import Cluster, Step, finished, running, waiting

CERT = certificate.generate("dev-0")
SPEC = load_spec({f"minicluster:{k}": v for k, v in config().items()}, "dev")
POD = keygen.keygen_pod(SPEC)
QUICK = (2.0, 2.0)


def kubelet(*steps: Step) -> Any:
    """Schedule the pod on node-1 at once, then do `steps`."""
    return lambda _pod: [Step(0.02, node="node-1"), *steps]


def run(
    pod: dict[str, Any] = POD,
    timeout: float = 10,
    request_timeout: tuple[float, float] = QUICK,
    schedule_timeout: float | None = None,
    say: Callable[[str], None] = print,
) -> Any:
    api_client = kube.api_client(None)
    return run_keygen_pod(
        api_client, pod, timeout, schedule_timeout=schedule_timeout, request_timeout=request_timeout, say=say
    )


def failure(**kwargs: Any) -> str:
    with pytest.raises(KeygenError) as raised:
        run(**kwargs)
    message = str(raised.value)
    assert CERT.secret_key not in message
    return message


def holding(text: str, api: Cluster, tmp_path: Path, after: float = 0.0) -> None:
    """The keygen container writes `text` as its certificate file `after` seconds after the first exec;
    an exec runs its command (the real reader, under sh) against that file."""
    written = tmp_path / "curve.cert"

    def exec_in_pod(_pod: dict[str, Any], command: list[str]) -> tuple[str, str, int | None]:
        assert command[-1] == paths.KEYGEN_CERT
        if not written.exists():
            threading.Timer(after, written.write_text, [text]).start()
        done = subprocess.run([*command[:-1], str(written)], capture_output=True, text=True, timeout=10)
        return done.stdout, done.stderr, done.returncode

    api.exec_handler = exec_in_pod


def log_reads(api: Cluster) -> list[str]:
    return [path for method, path, _ in api.requests if method == "GET" and path.endswith("/log")]


def deleted(api: Cluster) -> list[str]:
    return [path.rsplit("/", 1)[1] for method, path, _ in api.requests if method == "DELETE"]


# -- success --------------------------------------------------------------------------------------


def test_the_certificate_arrives_as_soon_as_it_is_written(kube_api: Cluster, tmp_path: Path) -> None:
    kube_api.kubelet = kubelet(Step(0.05, status=running()))
    holding(CERT.text(), kube_api, tmp_path, after=0.3)  # flux keygen takes a moment
    assert run() == CERT
    name = deleted(kube_api)[0]
    # The pod's start seen by a watch, never by reading it again; then one exec, whose command waits for
    # the file: no poll anywhere.
    assert kube_api.watches == [api_calls.pods("default")]
    assert (kube_api.reads(f"/pods/{name}"), kube_api.reads(f"/pods/{name}/exec")) == (0, 1)


def test_a_pod_slow_to_start_says_where_it_is_once_past_the_first_seconds(
    kube_api: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large image can take minutes to pull: `pulumi up` shows where the pod is meanwhile."""
    monkeypatch.setattr(Progress, "AFTER", 0.2)  # a watch lasts a whole second at least: it is said by then
    kube_api.kubelet = kubelet(Step(0.02, status=waiting("ContainerCreating")), Step(2.5, status=running()))
    holding(CERT.text(), kube_api, tmp_path)
    said: list[str] = []
    assert run(say=said.append) == CERT
    (name,) = deleted(kube_api)
    image = POD["spec"]["containers"][0]["image"]
    where = f"on node node-1, container 'keygen' ContainerCreating (image {image})"
    assert said == [f"the keygen pod default/{name} is {where}"]


def test_the_certificate_never_passes_through_the_log(kube_api: Cluster, tmp_path: Path) -> None:
    kube_api.kubelet = kubelet(Step(0.02, status=running(), log="minicluster: the certificate is made\n"))
    holding(CERT.text(), kube_api, tmp_path)
    assert run() == CERT
    assert log_reads(kube_api) == []
    assert all(CERT.secret_key not in json.dumps(pod) for _, _, pod in kube_api.history)  # nor the status


def test_the_pod_sent_has_whole_numbers_and_is_deleted_after(kube_api: Cluster, tmp_path: Path) -> None:
    kube_api.kubelet = kubelet(Step(0.02, status=running()))
    holding(CERT.text(), kube_api, tmp_path)
    run()
    (sent,) = kube_api.created_pods()
    assert sent["spec"]["activeDeadlineSeconds"] == 300
    assert isinstance(sent["spec"]["activeDeadlineSeconds"], int)
    assert deleted(kube_api) == [sent_name(kube_api)]
    assert kube_api.pods == {}


def sent_name(api: Cluster) -> str:
    (name,) = {str(pod["metadata"]["name"]) for _, _, pod in api.history}
    return name


def test_a_failed_delete_does_not_hide_the_certificate(
    kube_api: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kube_api.kubelet = kubelet(Step(0.02, status=running()))
    holding(CERT.text(), kube_api, tmp_path)
    kube_api.fail("DELETE", "/pods/", 500, "etcdserver: request timed out")
    assert run() == CERT
    err = capsys.readouterr().err
    assert "could not delete keygen pod default/dev-keygen-" in err
    assert "etcdserver: request timed out" in err
    assert "kubectl delete pod -n default dev-keygen-" in err


# -- what the pod did -----------------------------------------------------------------------------


def test_an_image_that_cannot_be_pulled(kube_api: Cluster) -> None:
    kube_api.kubelet = kubelet(Step(0.02, status=waiting("ImagePullBackOff", "Back-off pulling image")))
    assert failure() == (
        f"the keygen pod's container 'keygen' cannot pull image '{IMAGE}' (ImagePullBackOff: Back-off pulling "
        "image); check the image's name and tag, and minicluster:pod.imagePullSecrets"
    )
    assert len(deleted(kube_api)) == 1


def test_a_flux_view_image_that_cannot_be_pulled_fails_at_once_not_at_the_keygen_timeout(kube_api: Cluster) -> None:
    """The flux view's init container pulls its own image: the keygen pod waits on it, Pending."""
    view = load_spec(
        {f"minicluster:{k}": v for k, v in config(fluxView={"enabled": True, "image": "view:1"}).items()}, "dev"
    )
    pull_failure = {"waiting": {"reason": "ErrImagePull", "message": "view:1: not found"}}
    pulling = {"name": FLUX_VIEW, "image": "view:1", "imageID": "", "ready": False, "restartCount": 0,
               "state": pull_failure}  # fmt: skip
    status = {**waiting("PodInitializing"), "initContainerStatuses": [pulling]}
    kube_api.kubelet = kubelet(Step(0.02, status=status))
    said = failure(pod=keygen.keygen_pod(view), timeout=30)
    assert said.startswith("the keygen pod's container 'flux-view' cannot pull image 'view:1' (ErrImagePull: ")
    assert len(deleted(kube_api)) == 1


def test_an_image_without_flux(kube_api: Cluster) -> None:
    kube_api.kubelet = kubelet(Step(0.02, status=finished(127), log="/bin/sh: 3: flux: not found\n"))
    assert "has no `flux` command (exit 127)" in failure()
    assert len(deleted(kube_api)) == 1


def test_a_container_that_ended_before_the_exec_is_reported_by_its_exit_not_as_an_api_failure(
    kube_api: Cluster,
) -> None:
    """The kubelet answers 500 to an exec into a container that has ended: the pod says why it ended."""
    kube_api.kubelet = kubelet(Step(0.02, status=running()), Step(0.01, status=finished(127), log="flux: not found\n"))

    def exec_arrives_late(number: int) -> None:  # the container ends before the exec reaches the kubelet
        if kube_api.requests[number - 1][1].endswith("/exec"):
            time.sleep(0.1)

    kube_api.on_request = exec_arrives_late
    message = failure()
    assert "has no `flux` command (exit 127)" in message
    assert "API server failed" not in message
    assert any(path.endswith("/exec") for _, path, _ in kube_api.requests)  # it did try the exec
    assert len(deleted(kube_api)) == 1


def test_an_exec_cut_by_the_containers_end_is_reported_by_its_exit_once_the_kubelet_says_so(
    kube_api: Cluster,
) -> None:
    """Found on the real node: the exec's connection ends with the container, without the command's
    status, and the pod says Failed only at the kubelet's next report, a moment later."""
    kube_api.kubelet = kubelet(Step(0.02, status=running()), Step(0.5, status=finished(127), log="flux: not found\n"))
    kube_api.exec_handler = lambda _pod, _command: ("", "", None)  # the connection ends, no status
    message = failure()
    assert "has no `flux` command (exit 127)" in message
    assert "the connection ended first" not in message
    assert len(deleted(kube_api)) == 1


def test_an_exec_refused_because_the_container_ended_waits_for_the_kubelet_to_say_why(kube_api: Cluster) -> None:
    """Found in CI on the real node: the runtime refuses the exec (500) as soon as the container has
    ended, and the pod says Failed only at the kubelet's next report, a moment later."""
    kube_api.kubelet = kubelet(
        Step(0.02, status=running()), Step(0.01, ends=True), Step(0.5, status=finished(127), log="flux: not found\n")
    )

    def exec_after_the_end(number: int) -> None:
        if kube_api.requests[number - 1][1].endswith("/exec"):
            time.sleep(0.1)  # the exec reaches the kubelet after the container ended, before the report

    kube_api.on_request = exec_after_the_end
    message = failure()
    assert "has no `flux` command (exit 127)" in message
    assert "API server failed" not in message
    assert len(deleted(kube_api)) == 1


def test_an_exec_denied_by_rbac_is_not_waited_on(kube_api: Cluster) -> None:
    """Only a refusal that can come from an ended container is worth a watch: a 403 is told at once."""
    kube_api.kubelet = kubelet(Step(0.02, status=running()))
    kube_api.fail("GET", "/exec", 403, 'pods "dev-keygen" is forbidden: cannot create resource "pods/exec"')
    assert 'cannot create resource "pods/exec"' in failure()
    assert len(watches(kube_api)) == 1  # the watch until the container ran, and none after the refusal


def watches(api: Cluster) -> list[str]:
    """The pod's watches (the client lists with watch=true on the collection's path)."""
    return [path for method, path, _ in api.requests if method == "GET" and path.endswith("/pods")]


def test_an_exec_that_ends_without_a_status_while_the_pod_runs_on_says_so(
    kube_api: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It watches for the pod's end a while (ENDED_REPORT_WAIT, 5 s: here a fraction) and sees none."""
    monkeypatch.setattr(keygen_pod, "ENDED_REPORT_WAIT", 0.5)
    kube_api.kubelet = kubelet(Step(0.02, status=running()))
    kube_api.exec_handler = lambda _pod, _command: ("", "", None)
    assert "could not read the certificate from the keygen pod (the connection ended first)" in failure()
    assert len(deleted(kube_api)) == 1


def test_a_failed_pod_shows_its_last_log_lines_without_key_material(kube_api: Cluster) -> None:
    leaked = f'flux-keygen: error\n    secret-key = "{CERT.secret_key}"\nflux-keygen: Permission denied\n'
    kube_api.kubelet = kubelet(Step(0.02, status=finished(1), log=leaked))
    message = failure()
    assert "the keygen pod failed (exit 1)" in message
    assert "flux-keygen: Permission denied" in message
    assert "<redacted>" in message


def test_a_pod_killed_by_its_deadline(kube_api: Cluster) -> None:
    kube_api.kubelet = kubelet(Step(0.02, status=finished(137, reason="DeadlineExceeded")))
    assert "ran out of time (activeDeadlineSeconds)" in failure()


def test_output_that_is_not_a_certificate(kube_api: Cluster, tmp_path: Path) -> None:
    kube_api.kubelet = kubelet(Step(0.02, status=running()))
    holding("hello\n", kube_api, tmp_path)
    assert "the keygen pod's certificate is not usable" in failure()
    assert len(deleted(kube_api)) == 1


def test_a_pod_that_stays_pending_times_out_with_its_phase_and_events(kube_api: Cluster) -> None:
    def events_of_the_pod(pod: dict[str, Any]) -> list[Step]:
        kube_api.add_event("default", pod["metadata"]["name"], "FailedScheduling", "0/3 nodes are available")
        return []

    kube_api.kubelet = events_of_the_pod
    message = failure(timeout=1)
    assert "did not finish within 1s (phase Pending)" in message
    assert "FailedScheduling: 0/3 nodes are available" in message
    assert len(deleted(kube_api)) == 1


def test_a_pod_deleted_by_someone_else(kube_api: Cluster) -> None:
    kube_api.kubelet = kubelet(Step(0.05, delete=True))
    assert "was deleted before it finished" in failure()
