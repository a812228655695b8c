"""The API server's state, which tests arrange and the handler threads read and change under its lock;
the statuses a kubelet reports; and decoding as strict as the API server's."""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import schemas
from tests.kube_api.rbac import Account

Json = dict[str, Any]
SCHEMA_VERSION = "1.33.0"
CREATED = "2026-01-01T00:00:00Z"
TERMINATING = "unable to create new content in namespace {} because it is being terminated"
"""The API server's NamespaceLifecycle admission, refusing a create in a namespace being deleted (403)."""
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
    ends: bool = False
    """The container's process ends here: the runtime refuses an exec into it from now on, though the
    pod's status says so only at a later step (the kubelet's next report), as on a real node."""


ExecHandler = Callable[[Json, list[str]], tuple[str, str, int | None]]
"""(stdout, stderr, exit code) of a command run in a pod; None: the connection drops before the status."""


@dataclass
class Cluster:
    """The API server's state. Tests arrange it; the handler threads read and change it under `lock`."""

    namespaces: set[str] = field(default_factory=lambda: {"default"})
    terminating: set[str] = field(default_factory=set)
    """Namespaces being deleted: the API server's NamespaceLifecycle admission refuses any create in them."""
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
    existing: dict[tuple[str, str, str], Json] = field(default_factory=dict)
    """Objects that exist, by (resource, namespace, name), for the create and the get of any kind but pods,
    Jobs and ConfigMaps (whose stores are their own): each as the API server answers a get of it."""
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
    watches: list[str] = field(default_factory=list)
    """The path of each watch request (a GET with watch=true), in order: a client that waits by a watch,
    not by listing again and again, shows here."""
    watch_seconds: list[int] = field(default_factory=list)
    """Each watch's timeoutSeconds, in the order asked: how long the client meant to wait for a change."""
    kubelet: Callable[[Json], list[Step]] | None = None
    on_request: Callable[[int], None] | None = None
    """Called with each request's number (from 1) before it is answered: to change the cluster mid-command."""
    exec_handler: ExecHandler | None = None
    ended: set[tuple[str, str]] = field(default_factory=set)
    """(namespace, name) of pods whose container has ended at the runtime (Step.ends)."""
    accounts: dict[str, Account] = field(default_factory=dict)
    """Service accounts by their token, each with its Role's rules (rbac.py); other tokens are the admin's."""
    lock: threading.Condition = field(default_factory=threading.Condition)
    history: list[tuple[int, str, Json]] = field(default_factory=list)
    version: int = 1
    compacted: int = 0
    """The oldest resourceVersion a watch may start from (compact()); an older one gets 410 Expired."""
    delayed: int = 0
    """Requests a Fault's delay holds now."""
    most_delayed: int = 0
    """The most requests a Fault's delay held at once: were they sent side by side?"""
    url: str = ""
    kubeconfig: Path = Path()

    # -- arranging ----------------------------------------------------------------------------------

    def reset(self) -> Cluster:
        """As new: one namespace and nothing in it (for a server shared by a module's tests)."""
        with self.lock:
            for store in (self.pods, self.jobs, self.config_maps, self.logs, self.previous_logs, self.ended):
                store.clear()
            for items in (self.events, self.faults, self.requests, self.watches, self.watch_seconds, self.nodes,
                          self.quotas, self.limit_ranges, self.field_managers, self.webhooks):  # fmt: skip
                items.clear()
            self.crds.clear()
            self.pod_security.clear()
            self.existing.clear()
            self.accounts.clear()
            self.namespaces, self.terminating = {"default"}, set()
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

    def compact(self) -> None:
        """What etcd's compaction does to the API server: no watch can start before the current version."""
        with self.lock:
            self.compacted = self.version
            self.history.clear()

    def delete_pod(self, namespace: str, name: str) -> None:
        with self.lock:
            pod = self.pods.pop((namespace, name))
            self._record("DELETED", pod)

    def add_job(self, job: Json) -> None:
        metadata = job["metadata"]
        metadata.setdefault("uid", secrets.token_hex(8))
        metadata.setdefault("creationTimestamp", CREATED)
        metadata.setdefault("resourceVersion", str(self.version))
        self.jobs[(metadata["namespace"], metadata["name"])] = job

    def delete_everything(self) -> None:
        """What `pulumi destroy` leaves: no Job, no pods."""
        with self.lock:
            self.jobs.clear()
            for namespace, name in list(self.pods):
                self.delete_pod(namespace, name)

    def add_event(
        self,
        namespace: str,
        involved: str,
        reason: str,
        message: str,
        kind: str = "Pod",
        at: str = CREATED,
        uid: str | None = None,
    ) -> None:
        """An event about the object `involved` of `kind`: as every controller's, it names the object's
        uid too (`uid`, else that of the object by that name now, else one of an object gone)."""
        store = self.jobs if kind == "Job" else self.pods
        now = store.get((namespace, involved), {}).get("metadata", {}).get("uid")
        self.events.append({
            "metadata": {"name": f"{involved}.{len(self.events)}", "namespace": namespace},
            "involvedObject": {"kind": kind, "name": involved, "namespace": namespace,
                               "uid": uid or now or secrets.token_hex(8)},
            "reason": reason, "message": message, "type": "Warning", "firstTimestamp": at,
        })  # fmt: skip

    def reads(self, suffix: str) -> int:
        """How many times a path ending in `suffix` was read (a GET that is not a watch)."""
        gets = sum(1 for method, path, _ in self.requests if method == "GET" and path.endswith(suffix))
        return gets - sum(1 for path in self.watches if path.endswith(suffix))

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
                if step.ends:
                    self.ended.add(key)
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
