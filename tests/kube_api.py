"""A local Kubernetes API server stand-in, for the real `kubernetes` client to talk to over HTTP.

It speaks the API's JSON: objects, lists, `Status` error bodies with their codes, watch streams
(chunked JSON lines, ADDED then MODIFIED/DELETED, ended at `timeoutSeconds`), pod logs (with
`tailLines`, `follow` and `previous`), and exec over a websocket (the v4.channel.k8s.io protocol,
ending with its status channel). It decodes request bodies as strictly as the API server does: a
number with a fraction part, even `300.0`, is refused for an integer field, and so is an unknown
field. A "kubelet" script moves pods through their statuses, and faults make any request fail, hang
or be slow. Tests point a kubeconfig at it, so the client's own validation, encoding and
configuration all run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml

from tests import admission_plugins, pod_security_standard, schemas

Json = dict[str, Any]
SCHEMA_VERSION = "1.33.0"
CREATED = "2026-01-01T00:00:00Z"
WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "AlreadyExists",
           422: "Invalid", 500: "InternalError", 503: "ServiceUnavailable"}  # fmt: skip


@dataclass
class Fault:
    """Requests matching `method` and `path` (a regex on the path) fail with `status`, or answer late."""

    method: str
    path: str
    status: int | None = None
    message: str = ""
    delay: float = 0.0
    times: int | None = None  # None: every time


@dataclass
class Step:
    """One thing the stand-in kubelet does to a pod, `after` seconds after the previous step."""

    after: float
    status: Json | None = None
    node: str | None = None
    log: str = ""
    delete: bool = False


ExecHandler = Callable[[Json, list[str]], tuple[str, str, int | None]]
"""(stdout, stderr, exit code) of a command run in a pod; None: the connection drops before the status."""


@dataclass
class Cluster:
    """The API server's state. Tests arrange it; the handler threads read and change it under `lock`."""

    namespaces: set[str] = field(default_factory=lambda: {"default"})
    pods: dict[tuple[str, str], Json] = field(default_factory=dict)
    nodes: list[Json] = field(default_factory=list)
    quotas: list[Json] = field(default_factory=list)
    limit_ranges: list[Json] = field(default_factory=list)
    jobs: dict[tuple[str, str], Json] = field(default_factory=dict)
    config_maps: dict[tuple[str, str], Json] = field(default_factory=dict)
    crds: set[str] = field(default_factory=set)
    pod_security: dict[str, str] = field(default_factory=dict)
    """Namespaces labelled pod-security.kubernetes.io/enforce=restricted: {namespace: "restricted"}."""
    """Installed custom resources, as group/version/plural (scheduling.volcano.sh/v1beta1/podgroups)."""
    existing: set[tuple[str, str, str]] = field(default_factory=set)
    """(resource, namespace, name) of objects that exist, for the create of any kind but pods and jobs."""
    webhooks: list[Callable[[Json], str | None]] = field(default_factory=list)
    """Validating admission webhooks: each says why it denies an object being created, or None."""
    job_controller: Callable[[Json], None] | None = None
    """Called (under `lock`) with a Job just patched: to make or remove its pods, as the Job controller does."""
    field_managers: list[tuple[str, str | None]] = field(default_factory=list)
    """(path, fieldManager) of each PATCH."""
    logs: dict[tuple[str, str], str] = field(default_factory=dict)
    previous_logs: dict[tuple[str, str], str] = field(default_factory=dict)
    events: list[Json] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    requests: list[tuple[str, str, Json | None]] = field(default_factory=list)
    kubelet: Callable[[Json], list[Step]] | None = None
    on_request: Callable[[int], None] | None = None
    """Called with each request's number (from 1) before it is answered: to change the cluster mid-command."""
    exec_handler: ExecHandler | None = None
    lock: threading.Condition = field(default_factory=threading.Condition)
    history: list[tuple[int, str, Json]] = field(default_factory=list)
    version: int = 1
    url: str = ""
    kubeconfig: Path = Path()

    # -- arranging ----------------------------------------------------------------------------------

    def reset(self) -> Cluster:
        """As new: one namespace and nothing in it (for a server shared by a module's tests)."""
        with self.lock:
            for store in (self.pods, self.jobs, self.config_maps, self.logs, self.previous_logs):
                store.clear()
            for items in (self.events, self.faults, self.requests, self.nodes, self.quotas, self.limit_ranges,
                          self.field_managers, self.webhooks):  # fmt: skip
                items.clear()
            self.crds.clear()
            self.pod_security.clear()
            self.existing.clear()
            self.namespaces = {"default"}
            self.kubelet = self.exec_handler = self.on_request = self.job_controller = None
        return self

    def fail(self, method: str, path: str, status: int | None = None, message: str = "", **kwargs: Any) -> None:
        self.faults.append(Fault(method, path, status, message, **kwargs))

    def add_pod(self, pod: Json) -> Json:
        with self.lock:
            return self._store_pod(pod, "ADDED")

    def set_pod(self, namespace: str, name: str, **changes: Any) -> None:
        with self.lock:
            pod = self.pods[(namespace, name)]
            pod["status"] = changes.get("status", pod["status"])
            if "node" in changes:
                pod["spec"]["nodeName"] = changes["node"]
            self._store_pod(pod, "MODIFIED")

    def delete_pod(self, namespace: str, name: str) -> None:
        with self.lock:
            pod = self.pods.pop((namespace, name))
            self._record("DELETED", pod)

    def add_job(self, job: Json) -> None:
        metadata = job["metadata"]
        metadata.setdefault("creationTimestamp", CREATED)
        self.jobs[(metadata["namespace"], metadata["name"])] = job

    def delete_everything(self) -> None:
        """What `pulumi destroy` leaves: no Job, no pods."""
        with self.lock:
            self.jobs.clear()
            for namespace, name in list(self.pods):
                self.delete_pod(namespace, name)

    def add_event(
        self, namespace: str, involved: str, reason: str, message: str, kind: str = "Pod", at: str = CREATED
    ) -> None:
        self.events.append({
            "metadata": {"name": f"{involved}.{len(self.events)}", "namespace": namespace},
            "involvedObject": {"kind": kind, "name": involved, "namespace": namespace},
            "reason": reason, "message": message, "type": "Warning", "firstTimestamp": at,
        })  # fmt: skip

    def created_pods(self) -> list[Json]:
        return [body for method, path, body in self.requests if method == "POST" and path.endswith("/pods") and body]

    # -- internals ----------------------------------------------------------------------------------

    def _store_pod(self, pod: Json, event: str) -> Json:
        metadata = pod["metadata"]
        metadata.setdefault("uid", secrets.token_hex(8))
        metadata.setdefault("creationTimestamp", CREATED)
        pod.setdefault("status", {"phase": "Pending"})
        self.pods[(metadata["namespace"], metadata["name"])] = pod
        self._record(event, pod)
        return pod

    def _record(self, event: str, pod: Json) -> None:
        self.version += 1
        pod["metadata"]["resourceVersion"] = str(self.version)
        self.history.append((self.version, event, json.loads(json.dumps(pod))))
        self.lock.notify_all()

    def _run_kubelet(self, pod: Json) -> None:
        steps = self.kubelet(pod) if self.kubelet else []
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        for step in steps:
            time.sleep(step.after)
            with self.lock:
                if key not in self.pods:
                    return
                self.logs[key] = self.logs.get(key, "") + step.log
                if step.delete:
                    self.pods.pop(key)
                    self._record("DELETED", pod)
                    return
                if step.node:
                    pod["spec"]["nodeName"] = step.node
                if step.status is not None:
                    pod["status"] = step.status
                self._store_pod(pod, "MODIFIED")


# -- statuses a kubelet reports -------------------------------------------------------------------


def waiting(reason: str, message: str = "", container: str = "keygen", restarts: int = 0) -> Json:
    return {"phase": "Pending" if not restarts else "Running", "containerStatuses": [
        _container(container, {"waiting": {"reason": reason, "message": message}}, restarts)]}  # fmt: skip


def running(container: str = "keygen") -> Json:
    return {"phase": "Running", "containerStatuses": [_container(container, {"running": {"startedAt": CREATED}})]}


def finished(exit_code: int, container: str = "keygen", reason: str | None = None) -> Json:
    terminated = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error"}
    status: Json = {"phase": "Succeeded" if exit_code == 0 else "Failed",
                    "containerStatuses": [_container(container, {"terminated": terminated})]}  # fmt: skip
    if reason:
        status["reason"] = reason
    return status


def ready(container: str = "keygen") -> Json:
    """Running, and Ready (as a pod with no readiness probe is once its containers run)."""
    return {**running(container), "conditions": [{"type": "Ready", "status": "True"}]}


def unschedulable(message: str) -> Json:
    return {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]}  # fmt: skip


def _container(name: str, state: Json, restarts: int = 0) -> Json:
    return {"name": name, "image": "image", "imageID": "", "ready": "running" in state,
            "restartCount": restarts, "state": state}  # fmt: skip


# -- strict decoding, like the API server's ------------------------------------------------------


def decode_problem(body: Json) -> str | None:
    """Why the API server would refuse to decode `body` (None: it would not)."""
    found = schemas.problem(body, SCHEMA_VERSION)
    kind = body.get("kind")
    return None if found is None else f'{kind} in version "v1" cannot be handled as a {kind}: {found}'


# -- the server -----------------------------------------------------------------------------------

ROUTES: list[tuple[str, str, str]] = [
    ("GET", r"^/api/v1/nodes$", "list_nodes"),
    ("GET", r"^/api/v1/pods$", "list_all_pods"),
    ("GET", r"^/api/v1/namespaces/(?P<ns>[^/]+)/resourcequotas$", "list_quotas"),
    ("GET", r"^/api/v1/namespaces/(?P<ns>[^/]+)/limitranges$", "list_limit_ranges"),
    ("GET", r"^/api/v1/namespaces/(?P<ns>[^/]+)$", "get_namespace"),
    ("POST", r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods$", "create_pod"),
    ("GET", r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods$", "list_pods"),
    ("GET", r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)$", "get_pod"),
    ("DELETE", r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)$", "remove_pod"),
    ("GET", r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)/log$", "pod_log"),
    ("GET", r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)/exec$", "pod_exec"),
    ("GET", r"^/api/v1/namespaces/(?P<ns>[^/]+)/events$", "list_events"),
    ("GET", r"^/apis/batch/v1/namespaces/(?P<ns>[^/]+)/jobs/(?P<name>[^/]+)$", "get_job"),
    ("PATCH", r"^/apis/batch/v1/namespaces/(?P<ns>[^/]+)/jobs/(?P<name>[^/]+)$", "patch_job"),
    ("GET", r"^/api/v1/namespaces/(?P<ns>[^/]+)/configmaps/(?P<name>[^/]+)$", "get_config_map"),
    ("POST", r"^/api/v1/namespaces/(?P<ns>[^/]+)/(?P<resource>secrets|configmaps|services)$", "create_object"),
    ("POST", r"^/apis/(?P<group>batch)/(?P<version>v1)/namespaces/(?P<ns>[^/]+)/(?P<resource>jobs)$", "create_object"),
    (
        "POST",
        r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/namespaces/(?P<ns>[^/]+)/(?P<resource>[^/]+)$",
        "create_object",
    ),
    ("PATCH", r"^/api/v1/namespaces/(?P<ns>[^/]+)/configmaps/(?P<name>[^/]+)$", "patch_config_map"),
]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, as from a real server
    cluster: Cluster

    def log_message(self, *_: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def _dispatch(self, method: str) -> None:
        url = urlparse(self.path)
        self.query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        self.query_all = parse_qs(url.query)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        with self.cluster.lock:
            self.cluster.requests.append((method, url.path, body))
            number = len(self.cluster.requests)
        if self.cluster.on_request is not None:
            self.cluster.on_request(number)
        if self._faulted(method, url.path):
            return
        for route_method, pattern, action in ROUTES:
            match = re.match(pattern, url.path)
            if match and route_method == method:
                getattr(self, action)(body=body, **match.groupdict())
                return
        self._status(404, f"the server could not find the requested resource ({method} {url.path})")

    def _faulted(self, method: str, path: str) -> bool:
        for fault in self.cluster.faults:
            if fault.method == method and re.search(fault.path, path) and fault.times != 0:
                if fault.times is not None:
                    fault.times -= 1
                time.sleep(fault.delay)
                if fault.status is None:
                    return False
                self._status(fault.status, fault.message or REASONS.get(fault.status, "error"))
                return True
        return False

    # -- answers -------------------------------------------------------------------------------------

    def _send(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code: int, value: Json) -> None:
        self._send(code, json.dumps(value).encode())

    def _status(self, code: int, message: str) -> None:
        self._json(code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": message, "reason": REASONS.get(code, "Unknown"), "code": code})  # fmt: skip

    def _chunks(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # -- routes --------------------------------------------------------------------------------------

    def get_namespace(self, ns: str, body: Any) -> None:
        if ns not in self.cluster.namespaces:
            self._status(404, f'namespaces "{ns}" not found')
            return
        self._json(200, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def create_pod(self, ns: str, body: Json) -> None:
        if ns not in self.cluster.namespaces:
            self._status(404, f'namespaces "{ns}" not found')
            return
        problem = decode_problem(body)
        if problem:
            self._status(400, problem)
            return
        pod = json.loads(json.dumps(body))
        metadata = pod["metadata"]
        metadata.setdefault("name", metadata.get("generateName", "pod-") + secrets.token_hex(3)[:5])
        metadata["namespace"] = ns
        refused = self._pod_security(ns, pod)
        if refused:
            self._status(403, refused)
            return
        if self.query.get("dryRun") == "All":
            self._dry_run(ns, pod)
            return
        with self.cluster.lock:
            if (ns, metadata["name"]) in self.cluster.pods:
                self._status(409, f'pods "{metadata["name"]}" already exists')
                return
            stored = self.cluster._store_pod(pod, "ADDED")
            answer = json.dumps(stored).encode()
        threading.Thread(target=self.cluster._run_kubelet, args=(stored,), daemon=True).start()
        self._send(201, answer)

    def _pod_security(self, ns: str, pod: Json) -> str:
        """The Pod Security admission of a namespace that enforces a level: it judges pods only (a Job's
        pod template gets a warning, not a refusal), a dry run as a create, with the controls' names
        from the documentation (tests/pod_security_standard.py)."""
        level = self.cluster.pod_security.get(ns)
        broken = pod_security_standard.violations(pod["spec"]) if level == "restricted" else []
        if not broken:
            return ""
        return (
            f'pods "{pod["metadata"]["name"]}" is forbidden: violates PodSecurity "{level}:latest": {", ".join(broken)}'
        )

    def create_object(self, ns: str, body: Json, resource: str, group: str = "", version: str = "v1") -> None:
        """A create with dryRun=All of any kind but a pod, as the API server answers it: a built-in kind
        must decode by its schema, the namespace and (for a custom resource) its CRD must exist, the name
        must be free, then the webhooks judge it. (Semantic validation, 422, is not modelled: a test
        arranges it as a fault.) Nothing is stored (a create that is not a dry run: 501)."""
        custom = bool(group) and group != "batch"
        name = body["metadata"]["name"]
        qualified = f"{resource}.{group}" if group else resource
        refusal = None if custom else decode_problem(body)
        if refusal:
            self._status(400, refusal)
        elif ns not in self.cluster.namespaces:
            self._status(404, f'namespaces "{ns}" not found')
        elif custom and f"{group}/{version}/{resource}" not in self.cluster.crds:
            self._status(404, "the server could not find the requested resource")
        elif self.query.get("dryRun") != "All":
            self._status(501, "the stand-in stores only pods and jobs")
        elif (resource, ns, name) in self.cluster.existing:
            self._status(409, f'{qualified} "{name}" already exists')
        elif denied := next((said for webhook in self.cluster.webhooks if (said := webhook(body))), None):
            self._status(403, f'admission webhook "policy.example.com" denied the request: {denied}')
        else:
            self._json(201, body)

    def _dry_run(self, ns: str, pod: Json) -> None:
        """Admission runs (tests/admission_plugins.py), and nothing is stored."""
        in_ns = [lr for lr in self.cluster.limit_ranges if lr["metadata"]["namespace"] == ns]
        quotas = [q for q in self.cluster.quotas if q["metadata"]["namespace"] == ns]
        try:
            self._json(201, admission_plugins.admit(pod, in_ns, quotas))
        except admission_plugins.Refused as refused:
            self._status(403, str(refused))

    def list_pods(self, ns: str, body: Any) -> None:
        if self.query.get("watch") == "true":
            self._watch_pods(ns)
            return
        with self.cluster.lock:
            items = [pod for (space, _), pod in self.cluster.pods.items() if space == ns and self._selected(pod)]
            version = str(self.cluster.version)
        self._json(200, {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": version},
                         "items": items})  # fmt: skip

    def _selected(self, pod: Json) -> bool:
        labels = pod["metadata"].get("labels") or {}
        wanted = [term.split("=", 1) for term in self.query.get("labelSelector", "").split(",") if term]
        return all(labels.get(key) == value for key, value in wanted) and all(
            self._field_matches(pod, term) for term in self.query.get("fieldSelector", "").split(",") if term
        )

    @staticmethod
    def _field_matches(pod: Json, term: str) -> bool:
        """The field selectors the API server supports for pods that these tests use."""
        if term.startswith("status.phase!="):
            return bool(pod["status"].get("phase") != term.split("!=", 1)[1])
        key, value = term.split("=", 1)
        return key == "metadata.name" and bool(pod["metadata"]["name"] == value)

    def _page(self, kind: str, items: list[Json]) -> None:
        """A list, paginated by `limit` and `continue` as the API server does (the token is an offset here)."""
        start = int(self.query.get("continue") or 0)
        limit = int(self.query.get("limit") or 0) or len(items) or 1
        metadata: Json = {"resourceVersion": str(self.cluster.version)}
        if start + limit < len(items):
            metadata["continue"] = str(start + limit)
        self._json(200, {"apiVersion": "v1", "kind": kind, "metadata": metadata, "items": items[start : start + limit]})

    def list_nodes(self, body: Any) -> None:
        self._page("NodeList", self.cluster.nodes)

    def list_all_pods(self, body: Any) -> None:
        with self.cluster.lock:
            items = [pod for pod in self.cluster.pods.values() if self._selected(pod)]
        self._page("PodList", items)

    def list_quotas(self, ns: str, body: Any) -> None:
        self._page("ResourceQuotaList", [q for q in self.cluster.quotas if q["metadata"]["namespace"] == ns])

    def list_limit_ranges(self, ns: str, body: Any) -> None:
        self._page("LimitRangeList", [lr for lr in self.cluster.limit_ranges if lr["metadata"]["namespace"] == ns])

    def _watch_pods(self, ns: str) -> None:
        """As the API server watches: from `resourceVersion`, every change after it (so none between a
        list and its watch is lost); without one, the pods as they are (ADDED), then the changes."""
        deadline = time.monotonic() + float(self.query.get("timeoutSeconds", "1800"))
        self._chunks()
        since = self.query.get("resourceVersion")
        with self.cluster.lock:
            if since:
                initial, cursor = [], int(since)
            else:
                initial = [pod for (space, _), pod in self.cluster.pods.items() if space == ns and self._selected(pod)]
                cursor = self.cluster.version
        for pod in initial:
            self._chunk(json.dumps({"type": "ADDED", "object": pod}).encode() + b"\n")
        while (left := deadline - time.monotonic()) > 0:
            with self.cluster.lock:
                self.cluster.lock.wait(min(left, 0.2))
                news = [(rv, kind, pod) for rv, kind, pod in self.cluster.history if rv > cursor]
                cursor = self.cluster.version
            for _, kind, pod in news:
                if pod["metadata"]["namespace"] == ns and self._selected(pod):
                    self._chunk(json.dumps({"type": kind, "object": pod}).encode() + b"\n")
        self._chunk(b"")

    def _found(self, store: dict[tuple[str, str], Json], ns: str, name: str, resource: str) -> Json | None:
        """The object, or None once the API server's 404 has been sent."""
        found = store.get((ns, name))
        if found is None:
            self._status(404, f'{resource} "{name}" not found')
        return found

    def get_pod(self, ns: str, name: str, body: Any) -> None:
        if (pod := self._found(self.cluster.pods, ns, name, "pods")) is not None:
            self._json(200, pod)

    def remove_pod(self, ns: str, name: str, body: Any) -> None:
        if (pod := self._found(self.cluster.pods, ns, name, "pods")) is not None:
            self.cluster.delete_pod(ns, name)
            self._json(200, pod)

    def _streamable(self, ns: str, name: str) -> Json | None:
        """The pod, if its container has started; otherwise the API server's 400 (or 404) is sent."""
        pod = self._found(self.cluster.pods, ns, name, "pods")
        if pod is None:
            return None
        if not pod["spec"].get("nodeName"):
            self._status(400, f"pod {name} does not have a host assigned")
            return None
        container = self.query.get("container") or pod["spec"]["containers"][0]["name"]
        for status in pod["status"].get("containerStatuses") or []:
            waiting_state = status["state"].get("waiting")
            if status["name"] == container and waiting_state and not status.get("restartCount"):
                reason = waiting_state.get("reason", "ContainerCreating")
                self._status(400, f'container "{container}" in pod "{name}" is waiting to start: {reason}')
                return None
        return pod

    def pod_log(self, ns: str, name: str, body: Any) -> None:
        if self._streamable(ns, name) is None:
            return
        source = self.cluster.previous_logs if self.query.get("previous") == "true" else self.cluster.logs
        text = source.get((ns, name), "")
        if "tailLines" in self.query:
            text = "".join(text.splitlines(keepends=True)[-int(self.query["tailLines"]) :])
        if self.query.get("follow") != "true":
            self._send(200, text.encode(), "text/plain")
            return
        self._chunks()
        sent = len(text)
        self._chunk(text.encode())
        for more in self._follow(ns, name, sent):
            self._chunk(more.encode())
        self._chunk(b"")

    def _follow(self, ns: str, name: str, sent: int) -> Iterator[str]:
        """What the container writes next, until it stops or its pod goes."""
        while True:
            with self.cluster.lock:
                self.cluster.lock.wait(0.1)
                pod = self.cluster.pods.get((ns, name))
                text = self.cluster.logs.get((ns, name), "")
            if len(text) > sent:
                yield text[sent:]
                sent = len(text)
            if pod is None or pod["status"].get("phase") in ("Succeeded", "Failed"):
                return

    def list_events(self, ns: str, body: Any) -> None:
        selector = self.query.get("fieldSelector", "")
        wanted = selector.split("=", 1)[1] if selector.startswith("involvedObject.name=") else None
        items = [e for e in self.cluster.events if e["metadata"]["namespace"] == ns
                 and (wanted is None or e["involvedObject"]["name"] == wanted)]  # fmt: skip
        self._json(200, {"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": items})

    def get_job(self, ns: str, name: str, body: Any) -> None:
        if (job := self._found(self.cluster.jobs, ns, name, "jobs.batch")) is not None:
            self._json(200, job)

    def patch_job(self, ns: str, name: str, body: Json) -> None:
        """A merge patch; a number with a fraction part is refused for the Job's integer fields."""
        job = self._found(self.cluster.jobs, ns, name, "jobs.batch")
        if job is None or not self._patchable(body):
            return
        if _has_float(body):
            self._status(400, f"json: cannot unmarshal number into Go struct field of type int64 ({body})")
            return
        spec = body.get("spec") or {}
        if ("parallelism" in spec or "completions" in spec) and spec.get("parallelism") != spec.get("completions"):
            self._status(422, f'Job.batch "{name}" is invalid: spec.completions: Invalid value: '
                              "when changing, parallelism and completions must change together")  # fmt: skip
            return
        with self.cluster.lock:
            _merge(job, body)
            if self.cluster.job_controller is not None:
                self.cluster.job_controller(job)
        self._json(200, job)

    def get_config_map(self, ns: str, name: str, body: Any) -> None:
        if (found := self._found(self.cluster.config_maps, ns, name, "configmaps")) is not None:
            self._json(200, found)

    def patch_config_map(self, ns: str, name: str, body: Json) -> None:
        found = self._found(self.cluster.config_maps, ns, name, "configmaps")
        if found is None or not self._patchable(body):
            return
        if any(not isinstance(value, str | None) for value in (body.get("data") or {}).values()):
            self._status(
                400, f"json: cannot unmarshal number into Go struct field ConfigMap.data of type string ({body})"
            )
            return
        with self.cluster.lock:
            _merge(found, body)
        self._json(200, found)

    def _patchable(self, body: Any) -> bool:
        """As the API server: a JSON patch is a list of operations, a merge patch an object."""
        self.cluster.field_managers.append((urlparse(self.path).path, self.query.get("fieldManager")))
        content_type = self.headers.get("Content-Type", "")
        wants_list = content_type == "application/json-patch+json"
        if content_type not in ("application/json-patch+json", "application/merge-patch+json",
                                "application/strategic-merge-patch+json"):  # fmt: skip
            accepted = "application/json-patch+json, application/merge-patch+json"
            self._status(415, f"the body of the request was in an unknown format - accepted media types include: "
                              f"{accepted} ({content_type!r})")  # fmt: skip
            return False
        if wants_list != isinstance(body, list):
            self._status(400, f"json: cannot unmarshal {type(body).__name__} into Go value of type jsonpatch.Patch")
            return False
        return True

    def pod_exec(self, ns: str, name: str, body: Any) -> None:
        pod = self._streamable(ns, name)
        if pod is None:
            return
        container = self.query.get("container") or pod["spec"]["containers"][0]["name"]
        for status in pod["status"].get("containerStatuses") or []:
            if status["name"] == container and status["state"].get("terminated"):  # the kubelet has no process
                self._status(500, f'unable to upgrade connection: container not found ("{container}")')
                return
        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.send_header("Sec-WebSocket-Protocol", "v4.channel.k8s.io")
        self.end_headers()
        handler = self.cluster.exec_handler or (lambda _pod, _command: ("", "", 0))
        stdout, stderr, code = handler(pod, self.query_all.get("command", []))
        for channel, text in ((1, stdout), (2, stderr)):
            if text:
                self._frame(0x2, bytes([channel]) + text.encode())
        if code is not None:
            self._frame(0x2, bytes([3]) + json.dumps(_exec_status(code)).encode())
        self._frame(0x8, b"\x03\xe8")
        self.close_connection = True

    def _frame(self, opcode: int, payload: bytes) -> None:
        size = len(payload)
        header = bytes([0x80 | opcode]) + (bytes([size]) if size < 126 else bytes([126]) + size.to_bytes(2, "big"))
        self.wfile.write(header + payload)
        self.wfile.flush()


def _has_float(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_float(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_float(item) for item in value)
    return isinstance(value, float)


def _merge(target: Json, patch: Json) -> None:
    """RFC 7386: null removes a key."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value


def _exec_status(code: int) -> Json:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    causes = [{"reason": "ExitCode", "message": str(code)}]
    message = f"command terminated with non-zero exit code: {code}"
    return {"metadata": {}, "status": "Failure", "message": message, "reason": "NonZeroExitCode",
            "details": {"causes": causes}}  # fmt: skip


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up early (a stopped watch, a timeout) is part of the job, not an error."""


class StandIn:
    """The server in a thread, with a kubeconfig that points at it."""

    def __init__(self, directory: Path, context: str = "standin") -> None:
        self.cluster = Cluster()
        handler = type("Handler", (_Handler,), {"cluster": self.cluster})
        self.server = _Server(("127.0.0.1", 0), handler)
        self.cluster.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.cluster.kubeconfig = write_kubeconfig(directory / "kubeconfig", {context: self.cluster.url})
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def write_kubeconfig(path: Path, servers: dict[str, str]) -> Path:
    """A kubeconfig with one context per server (the first is current)."""
    names = list(servers)
    document = {
        "apiVersion": "v1", "kind": "Config", "current-context": names[0],
        "clusters": [{"name": name, "cluster": {"server": url}} for name, url in servers.items()],
        "users": [{"name": "tester", "user": {"token": "test-token"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "tester"}} for name in names],
    }  # fmt: skip
    path.write_text(yaml.safe_dump(document))
    return path


def refused_url() -> str:
    """An address on this machine where nothing listens: connections to it are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"
