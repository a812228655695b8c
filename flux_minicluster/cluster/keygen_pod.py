"""Run the keygen pod and read its certificate through the exec API into a validated certificate.

Written as plain JSON calls (cluster/api_calls.py: no typed client, whose import cost every first
`pulumi up` half a second before the Job could be created). It watches the pod (no polling delay: the
certificate is read the moment its container runs, by a command that returns as soon as `flux keygen`
has written it), bounds every request and the whole run by the timeout, and deletes the pod in every
case. The certificate never passes through the pod's log, its status or an event. Error messages say
what happened and what to do, and never contain key material.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from typing import Any

from flux_minicluster.cluster import api_calls, kube, objects, pod_exec
from flux_minicluster.cluster.waiting import Clock, Progress, Say, Wait, to_stderr
from flux_minicluster.config import paths
from flux_minicluster.config.certificate import CertificateError, CurveCertificate, parse, redact

COMMAND_NOT_FOUND = 127
DONE = ("Succeeded", "Failed")
ENDED_REPORT_WAIT = 5.0
"""Seconds to watch for the keygen container's end after an exec was refused or ended without the
command's status: the kubelet reports the end at its next look at the container (about a second)."""
NEEDS = f"create, watch and delete on pods and {kube.EXEC_RIGHTS}"
EXEC_NEEDS = f"{kube.EXEC_RIGHTS} (pulumi up reads the certificate through the exec API)"


class KeygenError(RuntimeError):
    """The keygen pod could not produce a certificate."""


def run_keygen_pod(
    api_client: Any,
    pod: dict[str, Any],
    timeout: float,
    *,
    schedule_timeout: float | None = None,
    request_timeout: tuple[float, float] = kube.REQUEST_TIMEOUT,
    clock: Clock | None = None,
    say: Say = to_stderr,
) -> CurveCertificate:
    namespace = pod["metadata"]["namespace"]
    container = pod["spec"]["containers"][0]
    image = container["image"]
    run = _Run(api_client, namespace, request_timeout)
    name = run.create(pod)
    wait = Wait(timeout, clock)
    try:
        status = run.wait(name, wait, schedule_timeout or timeout, Progress(say, wait.clock))
        if status.phase in DONE:
            raise KeygenError(_failure(run, name, status, image))
        return _certificate_by_exec(run, name, container["name"], image, max(wait.remaining, 1.0))
    except KeygenError:
        raise
    except Exception as error:  # a request that failed half-way: say which, by what happened
        raise KeygenError(_api_problem(error, namespace, "watching the keygen pod")) from None
    finally:
        run.delete(name)


class _Run:
    """The requests of one keygen run, each bounded by the request timeout."""

    def __init__(self, api_client: Any, namespace: str, request_timeout: tuple[float, float]) -> None:
        self.api, self.namespace, self.request_timeout = api_client, namespace, request_timeout
        self.pods = api_calls.pods(namespace)

    def create(self, pod: dict[str, Any]) -> str:
        try:
            created = api_calls.request(self.api, "POST", self.pods, body=pod, timeout=self.request_timeout)
        except Exception as error:
            raise KeygenError(_api_problem(error, self.namespace, "creating the keygen pod")) from None
        return str(created["metadata"]["name"])

    def wait(self, name: str, wait: Wait, schedule_timeout: float, progress: Progress) -> Any:
        """The pod's status once it is done; KeygenError if its image cannot be pulled, it stays
        unschedulable for schedule_timeout, or time runs out. Watched: each change wakes it up, and the
        time to say how it goes (a large image can take minutes to pull)."""

        def wake_at() -> float:  # when it will have waited too long to be scheduled, or is to say how it goes
            return min(wait.held_until(schedule_timeout), progress.due())

        while not wait.over:
            seen = False
            watch_ends = wake_at()
            for pod in self.changes(name, max(watch_ends - wait.clock.now(), 0.1)):
                seen, status = True, pod.status
                if status.phase in DONE or _running(status):
                    return status
                _check_waiting(pod)
                progress.tell(f"the keygen pod {self.namespace}/{name} is {_not_yet_running(pod)}")
                wait.held_for(bool(objects.unschedulable(status)))
                if wait.over or wake_at() < watch_ends:
                    break  # watch again, until the schedule timeout or the next line only
            if not seen and not self.exists(name):  # a watch starts with the pod as it is
                raise KeygenError(self._deleted(name))
            if wait.held >= schedule_timeout:  # unschedulable that long, as last seen
                why = objects.unschedulable(self.read(name).status)
                if why:
                    raise KeygenError(
                        f"the keygen pod could not be scheduled for {schedule_timeout:g}s "
                        f"(minicluster:scheduleTimeout): {why}"
                    )
                wait.held_for(False)
        raise KeygenError(_timeout(self, name, wait.timeout))

    def changes(self, name: str, remaining: float) -> Iterator[Any]:
        """The pod now and at every change, until the server ends the watch (at `remaining`)."""
        seconds = max(1, math.ceil(remaining))
        query = {"fieldSelector": f"metadata.name={name}"}
        for change, pod in api_calls.watch(self.api, self.pods, query, seconds, self.request_timeout[0]):
            if change == "DELETED":
                raise KeygenError(self._deleted(name))
            yield pod

    def _deleted(self, name: str) -> str:
        return (
            f"the keygen pod {self.namespace}/{name} was deleted before it finished "
            "(by someone else, or with its namespace); run `pulumi up` again"
        )

    def exists(self, name: str) -> bool:
        return api_calls.existing(self.api, api_calls.pods(self.namespace, name), self.request_timeout) is not None

    def read(self, name: str) -> Any:
        return api_calls.get(self.api, api_calls.pods(self.namespace, name), timeout=self.request_timeout)

    def read_certificate(self, name: str, container: str, timeout: float) -> tuple[str, str, int | None]:
        command = ["/bin/sh", "-c", paths.READ_CERTIFICATE, "read-certificate", paths.KEYGEN_CERT]
        return pod_exec.run_in_pod(self.api, self.namespace, name, container, command, timeout=timeout)

    def log(self, name: str, tail_lines: int | None = None) -> str:
        where = f"{api_calls.pods(self.namespace, name)}/log"
        return api_calls.text(self.api, where, {"tailLines": tail_lines}, self.request_timeout)

    def events(self, name: str) -> list[Any]:
        query = {"fieldSelector": f"involvedObject.name={name}"}
        found = api_calls.get(self.api, api_calls.events(self.namespace), query, timeout=self.request_timeout)
        return list(found.items or [])

    def delete(self, name: str) -> None:
        """A failed delete must not hide the outcome it follows: warn, and say how to clean up."""
        try:
            query = {"gracePeriodSeconds": 0}
            where = api_calls.pods(self.namespace, name)
            api_calls.request(self.api, "DELETE", where, query, timeout=self.request_timeout)
        except Exception as error:
            found = kube.problem(error)
            if found.kind != "not-found":
                print(
                    f"warning: could not delete keygen pod {self.namespace}/{name} ({found.detail}); "
                    f"delete it with: kubectl delete pod -n {self.namespace} {name}",
                    file=sys.stderr,
                )


def _api_problem(error: Exception, namespace: str, doing: str, needs: str = NEEDS) -> str:
    found = kube.problem(error)
    if found.kind == "not-found" and "namespace" in found.detail:
        return (
            f"namespace {namespace!r} does not exist: create it (kubectl create namespace {namespace}) "
            "or set minicluster:namespace"
        )
    return kube.describe(found, doing=doing, namespace=namespace, needs=needs)


def _certificate_by_exec(run: _Run, name: str, container: str, image: str, timeout: float) -> CurveCertificate:
    """The certificate, read from the keygen container's memory volume through the exec API."""
    try:
        stdout, stderr, code = run.read_certificate(name, container, timeout)
    except Exception as error:
        # The runtime refuses an exec into a container that has ended, before the kubelet reports the end
        # (found in CI on the real node): wait for that report, and say why it ended. A denial cannot be that.
        can_be_the_end = kube.problem(error).kind != "denied"
        ended = _ended(run, name, within=ENDED_REPORT_WAIT if can_be_the_end else 0.0)
        if ended is not None:
            raise KeygenError(_failure(run, name, ended, image)) from None
        doing = "reading the certificate from the keygen pod through the exec API"
        raise KeygenError(f"{_api_problem(error, run.namespace, doing, EXEC_NEEDS)}; the pod was deleted") from None
    if code != 0:
        # Without the command's status the connection most often ended with the container, whose end the
        # kubelet reports a moment later (found on the real node): wait for that, and say why it ended.
        ended = _ended(run, name, within=ENDED_REPORT_WAIT if code is None else 0.0)
        if ended is not None:
            raise KeygenError(_failure(run, name, ended, image))
        why = "the connection ended first" if code is None else f"exit {code}: {redact(stderr.strip()) or 'no message'}"
        raise KeygenError(f"could not read the certificate from the keygen pod ({why}); run `pulumi up` again")
    try:
        return parse(stdout)
    except CertificateError as error:
        raise KeygenError(f"the keygen pod's certificate is not usable: {error}") from None


def _ended(run: _Run, name: str, within: float = 0.0) -> Any | None:
    """The pod's status if it has ended, or ends `within` seconds (a watch); None if it runs on or
    cannot be read."""
    try:
        status = run.read(name).status
        if status.phase not in DONE and within > 0:
            status = next((pod.status for pod in run.changes(name, within) if pod.status.phase in DONE), status)
    except KeygenError:
        raise
    except Exception:
        return None
    return status if status.phase in DONE else None


def _not_yet_running(pod: Any) -> str:
    """Where a pod that does not run yet is: e.g. "waiting for a node (Unschedulable: 0/3 nodes are ...)",
    or "on node n1, container 'keygen' ContainerCreating (image ghcr.io/...)"."""
    where = pod.spec.node_name
    if not where:
        return f"waiting for a node ({objects.not_scheduled(pod.status) or 'not scheduled yet'})"
    for name, waiting, image in objects.waiting_containers(pod):
        return f"on node {where}, container {name!r} {waiting.reason} (image {image})"
    return f"on node {where}, starting"


def _running(status: Any) -> bool:
    """The keygen container has started (its command may still be making the certificate)."""
    return any(c.state is not None and c.state.running is not None for c in status.container_statuses or [])


def _check_waiting(pod: Any) -> None:
    """An image the pod cannot pull (its own, or the flux view's init container's) fails it at once:
    waiting longer would only run out keygenTimeout."""
    if why := objects.image_not_pulled(pod):
        raise KeygenError(f"the keygen pod's {why}; {objects.PULL_ADVICE}")


def _failure(run: _Run, name: str, status: Any, image: str) -> str:
    if status.phase == "Succeeded":
        return "the keygen pod ended before its certificate was read (keygenTimeout); run `pulumi up` again"
    if status.reason == "DeadlineExceeded":
        return f"the keygen pod ran out of time (activeDeadlineSeconds); {_log_tail(run, name)}"
    exit_code = _exit_code(status)
    if exit_code == COMMAND_NOT_FOUND:
        return (
            f"image {image!r} has no `flux` command (exit 127): use an image with Flux installed, "
            "or set minicluster:fluxPath or minicluster:keygenImage"
        )
    return f"the keygen pod failed (exit {exit_code}); {_log_tail(run, name)}"


def _exit_code(status: Any) -> int | None:
    codes = (objects.exit_code(container) for container in status.container_statuses or [])
    return next((code for code in codes if code is not None), None)


def _log_tail(run: _Run, name: str, lines: int = 10) -> str:
    try:
        log = run.log(name, tail_lines=lines)
    except Exception:
        return "its log could not be read"
    tail = [redact(line) for line in log.splitlines()[-lines:]]
    return "last log lines:\n    " + "\n    ".join(tail) if tail else "it printed nothing"


def _timeout(run: _Run, name: str, timeout: float) -> str:
    try:
        phase = run.read(name).status.phase
    except Exception:
        phase = "unknown"
    try:
        events = run.events(name)
    except Exception:
        events = []
    latest = [f"{event.reason}: {event.message}" for event in events[-5:]]
    shown = "\n    ".join(latest) if latest else "none"
    return (
        f"the keygen pod did not finish within {timeout:g}s (phase {phase}); raise minicluster:keygenTimeout "
        f"if the image is large. Latest events:\n    {shown}"
    )
