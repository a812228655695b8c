"""The Kubernetes API from inside a pod, as its service account (for the autoscaler and the keeper): HTTPS to
the address Kubernetes gives every pod, the server checked against the cluster's CA, the token read
again for each request (Kubernetes rotates it in place).

Standard library only, annotations as strings: an image's Python may be older than the project's.
"""

import contextlib
import datetime
import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

TIMEOUT = 10
"""Seconds one request may take."""
MERGE_PATCH = "application/merge-patch+json"


class ApiError(Exception):
    """A request the API server refused, or that never reached it: the status (None: no answer) and why."""

    def __init__(self, status: "int | None", message: str) -> None:
        super().__init__(f"{status or 'no answer'}: {message}")
        self.status = status


class ClusterApi:
    """The API server, as the pod's service account, in the pod's own namespace."""

    def __init__(self, account_dir: str, namespace: str) -> None:
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        host = f"[{host}]" if ":" in host else host  # an IPv6 address
        self.base = f"https://{host}:{os.environ['KUBERNETES_SERVICE_PORT']}"
        self.token_file = os.path.join(account_dir, "token")
        self.tls = ssl.create_default_context(cafile=os.path.join(account_dir, "ca.crt"))
        self.namespace = namespace

    def request(self, method: str, path: str, body: "dict[str, Any] | None" = None, **query: str) -> Any:
        url, headers = self._url(path, query), self._headers()
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = MERGE_PATCH if method == "PATCH" else "application/json"
        asked = urllib.request.Request(url, data=data, headers=headers, method=method)
        with self._opened(asked, TIMEOUT) as answer:
            return json.loads(answer.read() or b"null")

    def watch(self, path: str, seconds: int, **query: str) -> "Iterator[tuple[str, dict[str, Any]]]":
        """The changes to the objects at `path` (a list's path; `query` picks from it, with the list's
        resourceVersion), each (type, object), until the API server ends the watch after `seconds` or
        says the version is too old (410 Gone: list again). Any other error it sends is an ApiError."""
        url = self._url(path, {**query, "watch": "1", "timeoutSeconds": str(seconds)})
        asked = urllib.request.Request(url, headers=self._headers())
        with self._opened(asked, seconds + TIMEOUT) as stream:
            for line in stream:
                event = json.loads(line)
                if event["type"] == "ERROR":  # its object is a Status
                    if event["object"].get("code") == 410:
                        return
                    raise ApiError(event["object"].get("code"), str(event["object"].get("message")))
                yield event["type"], event["object"]

    @contextlib.contextmanager
    def _opened(self, asked: urllib.request.Request, timeout: float) -> "Iterator[Any]":
        """The answer to `asked`, read inside; whatever fails on the way, answer or reading, as an ApiError."""
        try:
            with urllib.request.urlopen(asked, timeout=timeout, context=self.tls) as answer:
                yield answer
        except urllib.error.HTTPError as refused:
            raise ApiError(refused.code, _message(refused.read())) from None
        except (OSError, ValueError) as failed:  # refused, reset, timed out, unreadable
            raise ApiError(None, str(getattr(failed, "reason", failed))) from None

    def _url(self, path: str, query: "dict[str, str]") -> str:
        return f"{self.base}{path}{'?' + urllib.parse.urlencode(query) if query else ''}"

    def _headers(self) -> "dict[str, str]":
        """The token read again for each request: Kubernetes rotates it in place."""
        with open(self.token_file) as token:
            return {"Authorization": f"Bearer {token.read().strip()}", "Accept": "application/json"}

    def job(self, name: str) -> "dict[str, Any]":
        found: dict[str, Any] = self.request("GET", f"/apis/batch/v1/namespaces/{self.namespace}/jobs/{name}")
        return found

    def patch_job(self, name: str, patch: "dict[str, Any]", manager: str) -> None:
        self.request("PATCH", f"/apis/batch/v1/namespaces/{self.namespace}/jobs/{name}", patch, fieldManager=manager)

    def patch_config_map(self, name: str, patch: "dict[str, Any]", manager: str) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/configmaps/{name}"
        self.request("PATCH", path, patch, fieldManager=manager)

    def event(self, job: "dict[str, Any]", reason: str, message: str, warning: bool, component: str) -> None:
        """An Event on the Job, as `kubectl describe job` lists them."""
        utc = datetime.timezone.utc  # noqa: UP017 -- datetime.UTC is Python 3.11's
        now = datetime.datetime.now(utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        meta = job["metadata"]
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}.", "namespace": self.namespace},
            "involvedObject": {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"],
                               "namespace": self.namespace, "uid": meta["uid"]},
            "reason": reason, "message": message, "type": "Warning" if warning else "Normal",
            "source": {"component": component}, "reportingComponent": component,
            "reportingInstance": os.environ.get("HOSTNAME", ""), "firstTimestamp": now, "lastTimestamp": now,
            "count": 1,
        }  # fmt: skip
        self.request("POST", f"/api/v1/namespaces/{self.namespace}/events", event)


def _message(body: bytes) -> str:
    """The API server's own words: the message of its Status object, else the body as it came."""
    try:
        return str(json.loads(body)["message"])
    except (ValueError, KeyError, TypeError):
        return body.decode(errors="replace").strip() or "(no body)"
