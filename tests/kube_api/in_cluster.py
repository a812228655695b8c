"""The stand-in as a pod reaches the API server: HTTPS at the address Kubernetes gives every pod
(KUBERNETES_SERVICE_HOST and _PORT), here the test pod network's gateway, with a certificate the pods
trust through their service account's ca.crt, and a token per service account whose Role the server
enforces (rbac.py). The same cluster state answers the tests' own client on 127.0.0.1."""

from __future__ import annotations

import os
import secrets
import socket
import ssl
import subprocess
import threading
from pathlib import Path

from tests.kube_api.rbac import Account, Json
from tests.kube_api.server import StandIn, _Server
from tests.kubelet.network import PodNetwork, ip, listening


class InCluster:
    """`stand_in`'s API, served on `network`'s gateway address to its pods (without a network: on this
    machine's 127.0.0.1, for a client in the test process)."""

    def __init__(self, stand_in: StandIn, directory: Path, network: PodNetwork | None = None) -> None:
        self.stand_in, self.directory = stand_in, directory
        self.host = network.gateway if network is not None else "127.0.0.1"
        directory.mkdir(parents=True, exist_ok=True)
        self.ca = self._certificate()
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(self.ca, directory / "key.pem")
        if network is not None:
            ip("addr", "add", f"{self.host}/16", "dev", "br0", namespace=network.switch)
            listener = listening(network.switch, self.host)
        else:
            listener = socket.create_server((self.host, 0))
        handler = type("InClusterHandler", (stand_in.handler,), {"in_cluster": True})
        self.server = _Server((self.host, 0), handler, bind_and_activate=False)
        self.server.socket = tls.wrap_socket(listener, server_side=True)
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def _certificate(self) -> Path:
        """A self-signed certificate for the gateway's address: the cluster's CA and its server's in one."""
        cert = self.directory / "ca.crt"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(self.directory / "key.pem"), "-out", str(cert), "-days", "1", "-subj", "/CN=kubernetes",
             "-addext", f"subjectAltName=IP:{self.host}"],
            check=True, capture_output=True, timeout=30,
        )  # fmt: skip
        return cert

    def service_account(self, namespace: str, name: str, rules: list[Json]) -> Path:
        """What the kubelet mounts in a pod that runs as this account: its token (which the server knows
        by the Role's rules), the CA and the namespace."""
        token = secrets.token_urlsafe(32)
        self.stand_in.cluster.accounts[token] = Account(namespace, name, rules)
        mounted = self.directory / f"account-{name}"
        mounted.mkdir(exist_ok=True)
        for file, text in {"token": token, "ca.crt": self.ca.read_text(), "namespace": namespace}.items():
            (mounted / file).write_text(text)
            os.chmod(mounted / file, 0o644)
        return mounted

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
