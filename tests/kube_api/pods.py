"""The pod routes of the stand-in: create (a dry run too, with the namespace's Pod Security and
admission plugins), list and watch, get, delete, logs, and exec over a websocket."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any

from tests import admission_plugins, pod_security_standard
from tests.kube_api.answers import Answers
from tests.kube_api.cluster import TERMINATING, Json, decode_problem
from tests.kube_api.rbac import watch_asked

WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class PodRoutes(Answers):
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
        if ns in self.cluster.terminating:
            self._status(403, f'pods "{metadata["name"]}" is forbidden: {TERMINATING.format(ns)}')
            return
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

    def _dry_run(self, ns: str, pod: Json) -> None:
        """Admission runs (tests/admission_plugins.py), and nothing is stored."""
        in_ns = [lr for lr in self.cluster.limit_ranges if lr["metadata"]["namespace"] == ns]
        quotas = [q for q in self.cluster.quotas if q["metadata"]["namespace"] == ns]
        try:
            self._json(201, admission_plugins.admit(pod, in_ns, quotas))
        except admission_plugins.Refused as refused:
            self._status(403, str(refused))

    def list_pods(self, ns: str, body: Any) -> None:
        if watch_asked(self.query):
            self._watch_pods(ns)
            return
        with self.cluster.lock:
            items = [pod for (space, _), pod in self.cluster.pods.items() if space == ns and self._selected(pod)]
            version = str(self.cluster.version)
        self._json(200, {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": version},
                         "items": items})  # fmt: skip

    def list_all_pods(self, body: Any) -> None:
        with self.cluster.lock:
            items = [pod for pod in self.cluster.pods.values() if self._selected(pod)]
        self._page("PodList", items)

    def _watch_pods(self, ns: str) -> None:
        """As the API server watches: from `resourceVersion`, every change after it (so none between a
        list and its watch is lost); without one, the pods as they are (ADDED), then the changes."""
        deadline = time.monotonic() + float(self.query.get("timeoutSeconds", "1800"))
        self._chunks()
        since = self.query.get("resourceVersion")
        with self.cluster.lock:
            if since and int(since) < self.cluster.compacted:  # as the API server: an event, then the end
                expired = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 410,
                           "message": f"too old resource version: {since} ({self.cluster.compacted})",
                           "reason": "Expired"}  # fmt: skip
                self._chunk(json.dumps({"type": "ERROR", "object": expired}).encode() + b"\n")
                self._chunk(b"")
                return
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

    def pod_exec(self, ns: str, name: str, body: Any) -> None:
        pod = self._streamable(ns, name)
        if pod is None:
            return
        container = self.query.get("container") or pod["spec"]["containers"][0]["name"]
        statuses = pod["status"].get("containerStatuses") or []
        ended = any(status["name"] == container and status["state"].get("terminated") for status in statuses)
        if ended or (ns, name) in self.cluster.ended:  # the runtime has no process to exec into
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
        if self.query.get("stdin") == "true":
            self._read_to_close()
        self.close_connection = True

    def _read_to_close(self) -> None:
        """The client's frames (its input), read up to its close frame, as a server that takes input reads
        them: one that closed with them unread would reset the connection, and the client could lose the
        frames before the reset."""
        self.connection.settimeout(10)
        try:
            while len(head := self.rfile.read(2)) == 2:
                opcode, size = head[0] & 0x0F, head[1] & 0x7F
                if size >= 126:
                    size = int.from_bytes(self.rfile.read(2 if size == 126 else 8), "big")
                self.rfile.read(4 + size)  # the mask (a client masks every frame), then the payload
                if opcode == 0x8:
                    return
        except OSError:  # the client hung up, or sent nothing more for 10 s
            return

    def _frame(self, opcode: int, payload: bytes) -> None:
        size = len(payload)
        header = bytes([0x80 | opcode]) + (bytes([size]) if size < 126 else bytes([126]) + size.to_bytes(2, "big"))
        self.wfile.write(header + payload)
        self.wfile.flush()


def _exec_status(code: int) -> Json:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    causes = [{"reason": "ExitCode", "message": str(code)}]
    message = f"command terminated with non-zero exit code: {code}"
    return {"metadata": {}, "status": "Failure", "message": message, "reason": "NonZeroExitCode",
            "details": {"causes": causes}}  # fmt: skip
