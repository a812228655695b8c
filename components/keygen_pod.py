"""Run the keygen pod and turn its log into a validated certificate.

Written against a CoreV1Api-like object (the `kubernetes` client's, or a fake in tests), with an
injectable clock, so every path is testable without a cluster. The pod is deleted in every case.
Error messages say what happened and what to do, and never contain key material.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from components.certificate import CertificateError, CurveCertificate, extract_from_log, redact

PULL_FAILURES = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
COMMAND_NOT_FOUND = 127


class KeygenError(RuntimeError):
    """The keygen pod could not produce a certificate."""


def run_keygen_pod(
    api: Any,
    pod: dict[str, Any],
    timeout: float,
    *,
    poll_interval: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> CurveCertificate:
    namespace = pod["metadata"]["namespace"]
    image = pod["spec"]["containers"][0]["image"]
    name = _create(api, namespace, pod)
    try:
        deadline = clock() + timeout
        while True:
            status = api.read_namespaced_pod(name, namespace).status
            if status.phase == "Succeeded":
                return _certificate_from_log(api, name, namespace)
            if status.phase == "Failed":
                raise KeygenError(_failure(api, name, namespace, status, image))
            _check_waiting(status, image)
            if clock() >= deadline:
                raise KeygenError(_timeout(api, name, namespace, status, timeout))
            sleep(poll_interval)
    finally:
        _delete(api, name, namespace)


def _create(api: Any, namespace: str, pod: dict[str, Any]) -> str:
    try:
        created = api.create_namespaced_pod(namespace, pod)
    except Exception as error:  # the client raises ApiException, urllib3 errors or OSError
        raise KeygenError(_api_problem(error, namespace)) from None
    return str(created.metadata.name)


def _api_problem(error: Exception, namespace: str) -> str:
    status = getattr(error, "status", None)
    if status == 404:
        return (
            f"namespace {namespace!r} does not exist: create it (kubectl create namespace {namespace}) "
            "or set minicluster:namespace"
        )
    if status in (401, 403):
        return f"the Kubernetes API refused to create the keygen pod in {namespace!r} ({status}): check your RBAC"
    if status is not None:
        return f"the Kubernetes API refused the keygen pod ({status}): {getattr(error, 'reason', error)}"
    return (
        f"cannot reach the Kubernetes cluster ({type(error).__name__}: {error}); "
        "check `kubectl cluster-info` and the kubernetes:context stack setting"
    )


def _certificate_from_log(api: Any, name: str, namespace: str) -> CurveCertificate:
    log = api.read_namespaced_pod_log(name, namespace)
    try:
        return extract_from_log(log)
    except CertificateError as error:
        raise KeygenError(f"the keygen pod's output is not a usable certificate: {error}") from None


def _check_waiting(status: Any, image: str) -> None:
    for container in status.container_statuses or []:
        waiting = container.state.waiting if container.state else None
        if waiting is not None and waiting.reason in PULL_FAILURES:
            raise KeygenError(
                f"cannot pull image {image!r} ({waiting.reason}: {waiting.message or 'no details'}); "
                "check the name, tag and imagePullSecrets"
            )


def _failure(api: Any, name: str, namespace: str, status: Any, image: str) -> str:
    if getattr(status, "reason", None) == "DeadlineExceeded":
        return f"the keygen pod ran out of time (activeDeadlineSeconds); {_log_tail(api, name, namespace)}"
    exit_code = _exit_code(status)
    if exit_code == COMMAND_NOT_FOUND:
        return (
            f"image {image!r} has no `flux` command (exit 127): use an image with Flux installed, "
            "or set minicluster:fluxPath or minicluster:keygenImage"
        )
    return f"the keygen pod failed (exit {exit_code}); {_log_tail(api, name, namespace)}"


def _exit_code(status: Any) -> int | None:
    for container in status.container_statuses or []:
        terminated = container.state.terminated if container.state else None
        if terminated is not None:
            return int(terminated.exit_code)
    return None


def _log_tail(api: Any, name: str, namespace: str, lines: int = 10) -> str:
    try:
        log = api.read_namespaced_pod_log(name, namespace, tail_lines=lines)
    except Exception:
        return "its log could not be read"
    tail = [redact(line) for line in str(log).splitlines()[-lines:]]
    return "last log lines:\n    " + "\n    ".join(tail) if tail else "it printed nothing"


def _timeout(api: Any, name: str, namespace: str, status: Any, timeout: float) -> str:
    try:
        events = api.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
    except Exception:
        events = []
    latest = [f"{e.reason}: {e.message}" for e in events[-5:]]
    shown = "\n    ".join(latest) if latest else "none"
    return (
        f"the keygen pod did not finish within {timeout:g}s (phase {status.phase}); "
        f"raise minicluster:keygenTimeout if the image is large. Latest events:\n    {shown}"
    )


def _delete(api: Any, name: str, namespace: str) -> None:
    """A failed delete must not hide the outcome it follows: warn, and say how to clean up."""
    try:
        api.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    except Exception as error:
        if getattr(error, "status", None) != 404:
            print(
                f"warning: could not delete keygen pod {namespace}/{name} ({error}); "
                f"delete it with: kubectl delete pod -n {namespace} {name}",
                file=sys.stderr,
            )
