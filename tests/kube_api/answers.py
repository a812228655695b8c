"""What every route of the stand-in answers with: JSON, `Status` errors, chunked streams, the objects
it finds (or the API server's 404), selections and pages as the API server makes them."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

from tests.kube_api.cluster import REASONS, Cluster, Json


class Answers(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, as from a real server
    cluster: Cluster
    query: dict[str, str]
    query_all: dict[str, list[str]]

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

    def _found(self, store: dict[tuple[str, str], Json], ns: str, name: str, resource: str) -> Json | None:
        """The object, or None once the API server's 404 has been sent."""
        found = store.get((ns, name))
        if found is None:
            self._status(404, f'{resource} "{name}" not found')
        return found

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
