"""The real node's registry: the images of tests/engines/images.py served over the OCI distribution API
(pull only), at the node's address. containerd is told (hosts.toml, node_files.registry_hosts) to ask it
first for each registry the stacks' images name (ghcr.io, docker.io, ...), so that a pull the kubelet
makes anyway (the pull policy Always, a `:latest` tag's default) resolves here to the image already on
the node, as it would resolve at the image's own registry. Nothing beyond this machine is reached.

It answers what containerd asks as a registry does: manifests by tag or digest (HEAD and GET, with
Docker-Content-Digest), blobs by digest, and the distribution API's JSON errors for anything unknown.
A mirror request names the registry it stands for in `?ns=`; the image's full name is ns/repository.
Standard library only.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.engines.images import NAME_ANNOTATION

ROUTE = re.compile(r"^/v2/(?P<repository>.+)/(?P<kind>manifests|blobs)/(?P<reference>[^/]+)$")


class Registry:
    """Serves the OCI layout in `layout` at `address`:`port` until `close`."""

    def __init__(self, layout: Path, address: str, port: int) -> None:
        index = json.loads((layout / "index.json").read_text())
        self.blobs = layout / "blobs" / "sha256"
        self.tags: dict[tuple[str, str], dict[str, object]] = {}
        """(full name without tag, tag) -> the manifest's descriptor."""
        for descriptor in index["manifests"]:
            name, _, tag = descriptor["annotations"][NAME_ANNOTATION].rpartition(":")
            self.tags[(name, tag)] = descriptor
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.answer(self, body=True)

            def do_HEAD(self) -> None:
                registry.answer(self, body=False)

            def log_message(self, format: str, *args: object) -> None:  # the requests are not logged
                pass

        self.server = ThreadingHTTPServer((address, port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, request: BaseHTTPRequestHandler, body: bool) -> None:
        url = urlsplit(request.path)
        if url.path in {"/v2", "/v2/"}:
            return self._send(request, 200, b"{}", "application/json", body)
        route = ROUTE.match(url.path)
        if route is None:
            return self._error(request, 404, "NAME_UNKNOWN", "no such repository", body)
        namespace = parse_qs(url.query).get("ns", [""])[0]
        name = f"{namespace}/{route['repository']}" if namespace else route["repository"]
        reference = route["reference"]
        if route["kind"] == "manifests":
            descriptor = self._manifest(name, reference)
            if descriptor is None:
                return self._error(request, 404, "MANIFEST_UNKNOWN", f"{name}:{reference} is not here", body)
            digest = str(descriptor["digest"])
            content = (self.blobs / digest.removeprefix("sha256:")).read_bytes()
            return self._send(request, 200, content, str(descriptor["mediaType"]), body, digest)
        blob = self.blobs / reference.removeprefix("sha256:")
        if not reference.startswith("sha256:") or not blob.is_file():
            return self._error(request, 404, "BLOB_UNKNOWN", f"{reference} is not here", body)
        return self._send_file(request, blob, reference, body)

    def _manifest(self, name: str, reference: str) -> dict[str, object] | None:
        if reference.startswith("sha256:"):
            found = [d for (n, _), d in self.tags.items() if n == name and d["digest"] == reference]
            return found[0] if found else None
        return self.tags.get((name, reference))

    @staticmethod
    def _send(
        request: BaseHTTPRequestHandler, status: int, content: bytes, media_type: str, body: bool, digest: str = ""
    ) -> None:
        request.send_response(status)
        request.send_header("Content-Type", media_type)
        request.send_header("Content-Length", str(len(content)))
        if digest:
            request.send_header("Docker-Content-Digest", digest)
        request.send_header("Docker-Distribution-API-Version", "registry/2.0")
        request.end_headers()
        if body:
            request.wfile.write(content)

    @staticmethod
    def _send_file(request: BaseHTTPRequestHandler, blob: Path, digest: str, body: bool) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "application/octet-stream")
        request.send_header("Content-Length", str(blob.stat().st_size))
        request.send_header("Docker-Content-Digest", digest)
        request.end_headers()
        if body:
            with blob.open("rb") as opened:
                for chunk in iter(lambda: opened.read(1 << 20), b""):
                    request.wfile.write(chunk)

    def _error(self, request: BaseHTTPRequestHandler, status: int, code: str, message: str, body: bool) -> None:
        content = json.dumps({"errors": [{"code": code, "message": message}]}).encode()
        self._send(request, status, content, "application/json", body)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
