"""Talking to the Kubernetes API: connecting the way kubectl does, and saying what went wrong.

Used by the keygen provider and by the operations tool. Every request carries a timeout, and every
failure is classified by what really happened: a connection that failed, a request the API server
refused (with its own message), or a request the client refused before sending it (a bug on our side).
Only the first is "cannot reach the cluster".
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Literal

from flux_minicluster.cluster.kubeconfig import CredentialsFailed as CredentialsFailed  # this module's callers'
from flux_minicluster.cluster.kubeconfig import NoCluster as NoCluster  # this module's callers'
from flux_minicluster.cluster.kubeconfig import file_client, given_client, one_line, path_in_use, where
from flux_minicluster.lifelong import lifelong

REQUEST_TIMEOUT = (10.0, 60.0)
"""(connect, read) seconds for one API request: a hung API server fails a step instead of blocking it."""

Kind = Literal["unreachable", "denied", "not-found", "conflict", "rejected", "server-error", "client-side"]


@dataclass(frozen=True)
class ApiProblem:
    """What went wrong with one request."""

    kind: Kind
    status: int | None
    detail: str
    """The API server's own message, the connection error, or the client's complaint."""

    @property
    def unreachable(self) -> bool:
        return self.kind == "unreachable"


POD_SECURITY = "violates PodSecurity"
"""In the Pod Security admission's refusal: 'pods "x" is forbidden: violates PodSecurity "restricted:latest": ...'."""
_WEBHOOK_DENIAL = re.compile(r'admission webhook "[^"]+" denied the request')


def by_policy(found: ApiProblem) -> bool:
    """The refusal is an admission policy's (Pod Security, a validating webhook such as Kyverno's or
    Gatekeeper's), not RBAC's: its 403 is no lack of rights, and no autoscaler helps."""
    return POD_SECURITY in found.detail or bool(_WEBHOOK_DENIAL.search(found.detail))


STACK_CLUSTER = "the stack's kubernetes:context and kubernetes:kubeconfig settings"
"""Where a stack picks its cluster, as pulumi-kubernetes reads it (else the current context)."""


def describe(
    found: ApiProblem, *, doing: str, namespace: str = "", needs: str = "", context: str = "", host: str = ""
) -> str:
    """The one wording of a failed request, per kind. `doing`: what the request was for ("creating the
    keygen pod"); `needs`: the RBAC verbs it takes; `context`: where the user picks the cluster."""
    said = f"{found.status}: {found.detail}" if found.status else found.detail
    where = f" in namespace {namespace!r}" if namespace else ""
    if by_policy(found):
        return f"an admission policy{where} refuses it ({said}) while {doing}"
    if found.kind == "unreachable":
        at = f" at {host}" if host else ""
        check = f"check `kubectl cluster-info` and {context or STACK_CLUSTER}"
        return f"cannot reach the Kubernetes cluster{at} ({said}) while {doing}; {check}"
    if found.kind == "server-error":
        return f"the Kubernetes API server failed ({said}) while {doing}"
    if found.kind == "denied":
        there = " there" if namespace else ""  # else `needs` says where (the cluster scope)
        rights = f"this needs {needs}{there}" if needs else f"your account lacks a right{there}"
        return f"access denied ({said}) while {doing}{where}: {rights} (check your RBAC)"
    if found.kind == "client-side":
        return (
            f"the Kubernetes client refused the request ({said}) while {doing}: this is a bug in the MiniCluster "
            "program; please report it with this message"
        )
    return f"the Kubernetes API refused the request ({said}) while {doing}"


@dataclass(frozen=True)
class Access:
    """Which cluster, and how to log in to it: the Kubernetes provider's own two settings, so that what
    the MiniCluster asks of the cluster itself (the admission check, the keygen pod, the guard, a resize)
    goes where the provider sends its objects."""

    context: str | None = None
    """The kubeconfig's context (None: its current one)."""
    kubeconfig: str | None = None
    """A kubeconfig's path or its text, as the provider's `kubeconfig` setting takes either (None:
    KUBECONFIG or ~/.kube/config, as kubectl reads them)."""

    def client(self) -> Any:
        return api_client(self.context, self.kubeconfig)


CURRENT_CONTEXT = Access()
"""The provider's defaults: the current context of KUBECONFIG or ~/.kube/config."""


def api_client(context: str | None, kubeconfig: str | None = None) -> Any:
    """A client for `context` of the kubeconfig (`kubeconfig`, else KUBECONFIG or ~/.kube/config; None:
    its current context), or for the pod's service account when there is no kubeconfig and this runs
    inside a cluster."""
    with lifelong():  # the client's import and configuration: a provider process keeps them to its end
        return _api_client(context, kubeconfig)


def _api_client(context: str | None, given: str | None) -> Any:
    from kubernetes import client, config

    if given is not None:
        api = given_client(given, context)
    elif (kubeconfig := path_in_use()) is not None:
        api = file_client(kubeconfig, context)
    elif context is not None:
        raise NoCluster(f"kubeconfig context {context!r} was asked for, but there is no kubeconfig ({where()})")
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException as error:
            raise NoCluster(f"the in-cluster service account is not usable: {error}") from None
        api = client.ApiClient(configuration)
    else:
        raise NoCluster(
            f"no kubeconfig ({where()}) and not running inside a cluster: point KUBECONFIG at yours, or make "
            "a local cluster with `kind create cluster`"
        )
    api.configuration.retries = _retries()
    return api


def _retries() -> Any:
    """Retry a connection that fails to open, never a request the server may be working on."""
    import urllib3

    return urllib3.Retry(total=2, connect=2, read=0, status=0, redirect=0, backoff_factor=0.2)


def problem(error: BaseException) -> ApiProblem:
    """Classify an exception raised by the `kubernetes` client."""
    import pydantic
    import urllib3
    from kubernetes.client.exceptions import ApiException, ApiTypeError, ApiValueError

    if isinstance(error, ApiException):
        status = int(error.status or 0)
        if status == 0:  # the client's wrapper for TLS and websocket failures
            return _from_status_zero(str(error.reason))
        return ApiProblem(_kind(status), status, _server_message(error))
    if isinstance(error, urllib3.exceptions.HTTPError | OSError):
        return ApiProblem("unreachable", None, _connection_message(error))
    if isinstance(error, pydantic.ValidationError | ApiTypeError | ApiValueError | TypeError | ValueError):
        return ApiProblem("client-side", None, one_line(str(error)))
    return ApiProblem("client-side", None, f"{type(error).__name__}: {one_line(str(error))}")


def _kind(status: int) -> Kind:
    if status in (401, 403):
        return "denied"
    if status == 404:
        return "not-found"
    if status == 409:
        return "conflict"
    if status >= 500:
        return "server-error"
    return "rejected"


def _server_message(error: Any) -> str:
    """The `message` of the Status object the API server sends with every error, else its reason."""
    try:
        body = json.loads(error.body or "")
    except (TypeError, ValueError):
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(error.reason or f"HTTP {error.status}")


HANDSHAKE = re.compile(r"Handshake status (\d+)")


def _from_status_zero(reason: str) -> ApiProblem:
    """A websocket upgrade (exec) refused by the API server comes back as status 0 with the answer inside."""
    handshake = HANDSHAKE.search(reason)
    if handshake is None:
        return ApiProblem("unreachable", None, one_line(reason))
    status = int(handshake.group(1))
    message = re.search(r'"message":\s*"((?:[^"\\]|\\.)*)"', reason)
    detail = json.loads(f'"{message.group(1)}"') if message else f"HTTP {status}"
    return ApiProblem(_kind(status), status, detail)


def _connection_message(error: BaseException) -> str:
    text = str(getattr(error, "reason", None) or error)
    errno = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if errno:
        return errno.group(1).strip()
    if "timed out" in text.lower():
        return "the API server did not answer in time"
    return one_line(text)


def failure(doing: str, error: BaseException) -> RuntimeError:
    """One line for `pulumi up`: what could not be done (`doing`: "reading the Job's size"), and why."""
    if isinstance(error, NoCluster):
        return RuntimeError(f"cannot reach the Kubernetes cluster while {doing}: {error}")
    return RuntimeError(describe(problem(error), doing=doing))


EXEC_RIGHTS = "get and create on pods/exec"
"""What the exec API asks of whoever runs a command in a pod: the client's WebSocket upgrade is a GET,
and the API server also checks create on it (kubectl's SPDY POST needs only create)."""
