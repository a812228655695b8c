"""The control plane the real-engine tier runs reports the Kubernetes release it was built from, as a
release build does: clients that read the server's version (kubectl, the Kubernetes provider) see a
version a real cluster has, not v0.0.0-master."""

from __future__ import annotations

import json
import subprocess

from kubernetes import client

from tests.engines.control_plane import ControlPlane
from tests.engines.versions import KUBERNETES, KUBERNETES_BIN


def test_the_api_server_reports_the_release_it_was_built_from(admin: client.ApiClient) -> None:
    version = client.VersionApi(admin).get_code()
    major, minor, _ = KUBERNETES.split(".")
    assert (version.git_version, version.major, version.minor) == (f"v{KUBERNETES}", major, minor)
    assert version.git_tree_state == "clean"


def test_kubectl_parses_the_servers_version(control_plane: ControlPlane) -> None:
    said = subprocess.run(
        [str(KUBERNETES_BIN / "kubectl"), "--kubeconfig", str(control_plane.kubeconfig), "version", "-o", "json"],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    versions = json.loads(said.stdout)
    assert versions["serverVersion"]["gitVersion"] == versions["clientVersion"]["gitVersion"] == f"v{KUBERNETES}"
    assert "WARNING" not in said.stderr
