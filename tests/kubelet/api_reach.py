"""How the test kubelet's pods reach a real API server (node.py): at the `kubernetes` Service's address
inside the pod network, through a relay to the API server on this machine's loopback (TLS end to end:
the server's certificate names that address), with their service accounts' files from the TokenRequest
API. And the objects a real `pulumi up` created, as manifests, for the kubelet to run."""

from __future__ import annotations

import base64
import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubernetes import client

from tests.engines.control_plane import SERVICE_HOST, ControlPlane
from tests.engines.node_host import both_ways
from tests.kubelet.network import PodNetwork, ip, listening
from tests.kubelet.volumes import Manifest

API_PORT = 443
"""The `kubernetes` Service's port."""


def token_dir(api: client.ApiClient, directory: Path, namespace: str, account: str, ca: Path) -> Path:
    """What Kubernetes projects for a container of that account: a token from the TokenRequest API, the
    cluster's CA and the namespace, readable by the pod's user whoever that is."""
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600))
    answer = client.CoreV1Api(api).create_namespaced_service_account_token(account, namespace, request)
    assert answer.status is not None and answer.status.token is not None
    directory.mkdir(parents=True, exist_ok=True)
    for file, text in {"token": answer.status.token, "ca.crt": ca.read_text(), "namespace": namespace}.items():
        (directory / file).write_text(text)
        (directory / file).chmod(0o644)
    return directory


def live_objects(api: client.ApiClient, namespace: str, job: str) -> list[Manifest]:
    """The Job `job` and the ConfigMaps and Secrets of its namespace as the API server holds them, as
    manifests (the Secrets' data decoded, as the kubelet writes their files)."""
    core = client.CoreV1Api(api)
    found: list[Any] = [client.BatchV1Api(api).read_namespaced_job(job, namespace)]
    found += core.list_namespaced_config_map(namespace).items
    manifests = [as_manifest(api, obj) | {"kind": type(obj).__name__.removeprefix("V1")} for obj in found]
    secret: Any
    for secret in core.list_namespaced_secret(namespace).items:
        data = {key: base64.b64decode(value).decode() for key, value in (secret.data or {}).items()}
        manifests.append({"kind": "Secret", "metadata": {"name": secret.metadata.name}, "stringData": data})
    return manifests


def as_manifest(api: client.ApiClient, obj: Any) -> Manifest:
    manifest: Manifest = api.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
    return manifest


class ServiceRelay:
    """The API server at the `kubernetes` Service's address inside the pod network, and the service
    accounts' files from the TokenRequest API."""

    def __init__(self, network: PodNetwork, plane: ControlPlane, admin: client.ApiClient, directory: Path) -> None:
        self.network, self.plane, self.admin, self.directory = network, plane, admin, directory
        self.host, self.port = SERVICE_HOST, API_PORT
        ip("addr", "add", f"{network.gateway}/16", "dev", "br0", namespace=network.switch)
        self._service_address("add")
        network.routes.append(SERVICE_HOST)
        self.listener = listening(network.switch, SERVICE_HOST, API_PORT)
        self.listener.settimeout(0.2)
        self.stopping = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                inside, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._relay, args=(inside,), daemon=True).start()

    def _relay(self, inside: socket.socket) -> None:
        """Bytes both ways until either side closes: the TLS session is the pod's with the API server."""
        with inside, socket.create_connection(("127.0.0.1", self.plane.port), timeout=10) as outside:
            both_ways(inside, outside, self.stopping)

    @contextlib.contextmanager
    def unreachable(self) -> Iterator[None]:
        """The API server gone from the pod network inside the block: its address leaves the switch,
        which does not forward, so what the pods send it is dropped without an answer. Connections
        stall and new ones get no reply, as on a network that lost its route; then the address is back."""
        self._service_address("del")
        try:
            yield
        finally:
            self._service_address("add")

    def _service_address(self, action: str) -> None:
        """The `kubernetes` Service's address on the switch (`add`), or off it (`del`)."""
        ip("addr", action, f"{SERVICE_HOST}/32", "dev", "br0", namespace=self.network.switch)

    def service_account(self, namespace: str, name: str, rules: list[Manifest]) -> Path:
        """The account's files from the API server, whose RBAC judges the token by the account's real
        roles (`rules` are the stand-in's business)."""
        del rules
        return token_dir(self.admin, self.directory / f"account-{namespace}-{name}", namespace, name, self.plane.ca)

    def stop(self) -> None:
        self.stopping.set()
        self.listener.close()
