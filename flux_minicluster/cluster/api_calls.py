"""Calls to the API server as plain JSON requests, with the `kubernetes` client's configuration and
credentials but without its typed API classes and models.

Why: importing CoreV1Api builds a pydantic validator for each of its ~400 methods (0.33 s) and reading a
pod into the client's models imports ~50 of them (0.13 s). The keygen pod's provider paid both on every
first `pulumi up`, before the Job could be created. An object comes back as a `View`, which reads like the
client's models (`pod.status.container_statuses`), so the code that reads it (cluster/objects.py) serves
both. Errors are the client's own ApiException, so kube.problem classifies them as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from flux_minicluster.cluster.kube import REQUEST_TIMEOUT

MAPS = frozenset({"labels", "annotations", "data", "binaryData", "nodeSelector", "matchLabels", "limits", "requests",
                  "capacity", "allocatable", "hard", "used"})  # fmt: skip
"""The API's free-form maps (string keys of the user's choosing): they stay dicts, as in the client's models."""


class View:
    """A JSON object read the way the client's models read: `status.container_statuses` for the field
    `containerStatuses`, None for a field the server left out, a free-form map (MAPS) as a dict.
    Timestamps stay RFC 3339 text."""

    __slots__ = ("fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and the like ask for protocols a View does not have
            raise AttributeError(name)
        head, *rest = name.split("_")
        field = head + "".join(part[:1].upper() + part[1:] for part in rest)
        value = self.fields.get(field)
        return value if field in MAPS else view(value)

    def __repr__(self) -> str:
        return f"View({self.fields!r})"


T = TypeVar("T")
SIDE_BY_SIDE = 16
"""At most this many requests at once (together)."""


def together(calls: list[Callable[[], T]]) -> list[T | Exception]:
    """Each call's answer, or the exception it raised, in the order given. The calls are sent side by
    side: each mostly waits for the API server, and a remote one's round trips would add up."""
    if not calls:
        return []
    with ThreadPoolExecutor(max_workers=min(len(calls), SIDE_BY_SIDE)) as pool:
        sent = [pool.submit(call) for call in calls]
        return [error if isinstance(error := future.exception(), Exception) else future.result() for future in sent]


def result(answer: T | Exception) -> T:
    """together's answer, or its exception raised."""
    if isinstance(answer, Exception):
        raise answer
    return answer


def view(value: Any) -> Any:
    """`value` with every JSON object in it as a View."""
    if isinstance(value, dict):
        return View(value)
    if isinstance(value, list):
        return [view(item) for item in value]
    return value


def path(api_version: str, plural: str, namespace: str | None = None, name: str | None = None) -> str:
    """Where the API server keeps objects of a kind (and one of them): /api/v1/... for the core group,
    else /apis/GROUP/VERSION/..."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    where = f"{base}/namespaces/{namespace}/{plural}" if namespace is not None else f"{base}/{plural}"
    return f"{where}/{name}" if name is not None else where


MERGE_PATCH = "application/merge-patch+json"
"""RFC 7386: the patch is the object's changed fields, a field set to None is removed."""


def _send(
    api_client: Any, method: str, where: str, query: dict[str, Any] | None, body: Any, timeout: tuple[float, float],
    content_type: str = "application/json",
) -> Any:  # fmt: skip
    """The request sent; the response unread, or the client's ApiException for a status other than 2xx."""
    from kubernetes.client.exceptions import ApiException

    headers = {"Accept": "application/json", **({"Content-Type": content_type} if body is not None else {})}
    params = [(key, value) for key, value in (query or {}).items() if value is not None]
    serialized = api_client.param_serialize(
        method, where, query_params=params, header_params=headers, body=body, auth_settings=["BearerToken"]
    )
    response = api_client.call_api(*serialized, _request_timeout=timeout)
    if not 200 <= response.status <= 299:
        response.read()
        raise ApiException.from_response(http_resp=response, body=None, data=None)
    return response


def request(
    api_client: Any,
    method: str,
    where: str,
    query: dict[str, Any] | None = None,
    body: Any = None,
    timeout: tuple[float, float] = REQUEST_TIMEOUT,
    content_type: str = "application/json",
) -> Any:
    """One call (`where`: /api/v1/..., /apis/GROUP/VERSION/...): the server's JSON answer."""
    return json.loads(_send(api_client, method, where, query, body, timeout, content_type).read())


def get(
    api_client: Any, where: str, query: dict[str, Any] | None = None, timeout: tuple[float, float] = REQUEST_TIMEOUT
) -> Any:
    """An object, or a list (its `items`), as a View."""
    return view(request(api_client, "GET", where, query, timeout=timeout))


def existing(api_client: Any, where: str, timeout: tuple[float, float] = REQUEST_TIMEOUT) -> Any | None:
    """The object at `where` as a View; None where the API server says there is none (404)."""
    from flux_minicluster.cluster import kube

    try:
        return get(api_client, where, timeout=timeout)
    except Exception as error:
        if kube.problem(error).kind != "not-found":
            raise
        return None


def patch(api_client: Any, where: str, changes: dict[str, Any], field_manager: str | None = None) -> Any:
    """A merge patch of the object at `where`: the object as it is now, as a View."""
    return view(request(api_client, "PATCH", where, {"fieldManager": field_manager}, changes, content_type=MERGE_PATCH))


def jobs(namespace: str, name: str | None = None) -> str:
    return path("batch/v1", "jobs", namespace, name)


def pods(namespace: str, name: str | None = None) -> str:
    return path("v1", "pods", namespace, name)


def events(namespace: str) -> str:
    return path("v1", "events", namespace)


def text(api_client: Any, where: str, query: dict[str, Any], timeout: tuple[float, float] = REQUEST_TIMEOUT) -> str:
    """A GET whose answer is text (a pod's log)."""
    data: bytes = _send(api_client, "GET", where, query, None, timeout).read()
    return data.decode("utf-8", errors="replace")


def watch(
    api_client: Any, where: str, query: dict[str, Any], seconds: int, connect_timeout: float = REQUEST_TIMEOUT[0]
) -> Generator[tuple[str, View]]:
    """Each change to the objects at `where` (ADDED, MODIFIED, DELETED, and with no resourceVersion the
    objects as they are first), until the server ends the watch after `seconds`. An ERROR event raises the
    client's ApiException with the event's code (410: the resourceVersion is older than the server keeps)."""
    from kubernetes.client.exceptions import ApiException

    query = {**query, "watch": "true", "timeoutSeconds": seconds, "allowWatchBookmarks": "false"}
    response = _send(api_client, "GET", where, query, None, (connect_timeout, seconds + connect_timeout))
    ended = False
    try:
        for line in _lines(response.response):
            event = json.loads(line)
            if event["type"] == "ERROR":
                status = event.get("object") or {}
                raise ApiException(status=status.get("code"), reason=status.get("message") or status.get("reason"))
            if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                yield event["type"], view(event["object"])
        ended = True
    finally:
        # A watch left before the server ended it still has a stream open on its connection: closed, not
        # handed back to the pool for the next request to read the rest of.
        if ended:
            response.response.release_conn()
        else:
            response.response.close()


def _lines(raw: Any) -> Iterator[str]:
    """The watch's events, one JSON document a line, as the chunks of the stream bring them."""
    pending = b""
    for chunk in raw.stream(amt=None, decode_content=False):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from (line.decode("utf-8") for line in complete if line.strip())
