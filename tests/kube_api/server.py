"""The stand-in's server: its routes, the handler that dispatches them (after the faults a test
arranged), and the server in a thread with a kubeconfig that points at it."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml

from tests.kube_api import rbac
from tests.kube_api.cluster import REASONS, Cluster
from tests.kube_api.objects import ObjectRoutes
from tests.kube_api.pods import PodRoutes
from tests.kube_api.rbac import watch_asked

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
    ("POST", r"^/api/v1/namespaces/(?P<ns>[^/]+)/events$", "create_event"),
    ("GET", r"^/apis/batch/v1/namespaces/(?P<ns>[^/]+)/jobs/(?P<name>[^/]+)$", "get_job"),
    ("PATCH", r"^/apis/batch/v1/namespaces/(?P<ns>[^/]+)/jobs/(?P<name>[^/]+)$", "patch_job"),
    ("GET", r"^/api/v1/namespaces/(?P<ns>[^/]+)/configmaps/(?P<name>[^/]+)$", "get_config_map"),
    (
        "POST",
        r"^/api/v1/namespaces/(?P<ns>[^/]+)/(?P<resource>secrets|configmaps|services|serviceaccounts)$",
        "create_object",
    ),
    ("POST", r"^/apis/(?P<group>batch)/(?P<version>v1)/namespaces/(?P<ns>[^/]+)/(?P<resource>jobs)$", "create_object"),
    (
        "POST",
        r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/namespaces/(?P<ns>[^/]+)/(?P<resource>[^/]+)$",
        "create_object",
    ),
    ("PATCH", r"^/api/v1/namespaces/(?P<ns>[^/]+)/configmaps/(?P<name>[^/]+)$", "patch_config_map"),
    ("GET", r"^/api(?:s/[^/]+)?/[^/]+/namespaces/(?P<ns>[^/]+)/(?P<resource>[^/]+)/(?P<name>[^/]+)$", "get_object"),
]


class _Handler(PodRoutes, ObjectRoutes):
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
            if method == "GET" and watch_asked(self.query):
                self.cluster.watches.append(url.path)
                self.cluster.watch_seconds.append(int(self.query.get("timeoutSeconds", "1800")))
        if self.cluster.on_request is not None:
            self.cluster.on_request(number)
        if self._faulted(method, url.path) or self._forbidden(method, url.path):
            return
        for route_method, pattern, action in ROUTES:
            match = re.match(pattern, url.path)
            if match and route_method == method:
                getattr(self, action)(body=body, **match.groupdict())
                return
        self._status(404, f"the server could not find the requested resource ({method} {url.path})")

    in_cluster = False
    """Served to the pods (in_cluster.py): there, only the service accounts' tokens are known."""

    def _forbidden(self, method: str, path: str) -> bool:
        """A service account's request that its Role does not allow (rbac.py); from a pod, a request with
        a token the server does not know (401) or with none (anonymous: 403), as the API server says it."""
        header = self.headers.get("Authorization") or ""
        account = self.cluster.accounts.get(header.removeprefix("Bearer "))
        if account is None and self.in_cluster and header:
            self._status(401, "Unauthorized")
            return True
        if account is None and self.in_cluster:
            account = rbac.ANONYMOUS
        why = rbac.refusal(account, method, path, self.query) if account is not None else None
        if why is not None:
            self._status(403, why)
        return why is not None

    def _delay(self, seconds: float) -> None:
        with self.cluster.lock:
            self.cluster.delayed += 1
            self.cluster.most_delayed = max(self.cluster.most_delayed, self.cluster.delayed)
        time.sleep(seconds)
        with self.cluster.lock:
            self.cluster.delayed -= 1

    def _faulted(self, method: str, path: str) -> bool:
        for fault in self.cluster.faults:
            if fault.method == method and re.search(fault.path, path) and fault.times != 0:
                if fault.times is not None:
                    fault.times -= 1
                self._delay(fault.delay)
                if fault.status is None:
                    return False
                self._status(fault.status, fault.message or REASONS.get(fault.status, "error"))
                return True
        return False


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up early (a stopped watch, a timeout) is part of the job, not an error."""


class StandIn:
    """The server in a thread, with a kubeconfig that points at it."""

    def __init__(self, directory: Path, context: str = "standin") -> None:
        self.cluster = Cluster()
        self.handler = type("Handler", (_Handler,), {"cluster": self.cluster})
        self.server = _Server(("127.0.0.1", 0), self.handler)
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
