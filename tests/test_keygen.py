"""The keygen pod's manifest (a pure builder). Its run is tested in test_keygen_pod.py, against the
local API stand-in, and the providers in test_certificate_providers.py, over gRPC."""

from __future__ import annotations

from components.builders import manifests
from components.config.spec import load_spec
from tests.conftest import IMAGE, config

SPEC = load_spec({f"minicluster:{k}": v for k, v in config().items()}, "dev")
POD = manifests.keygen_pod(SPEC, "BEGIN", "END")


def test_keygen_pod_runs_flux_keygen_once_in_the_cluster_image() -> None:
    spec = POD["spec"]
    assert POD["metadata"]["generateName"] == "dev-keygen-"
    assert spec["restartPolicy"] == "Never"
    assert spec["automountServiceAccountToken"] is False
    assert spec["activeDeadlineSeconds"] == 300
    (container,) = spec["containers"]
    assert container["image"] == IMAGE
    assert 'keygen --name="$MC_CERT_NAME"' in container["command"][2]
    assert {"name": "MC_CERT_NAME", "value": "dev-0"} in container["env"]


def test_keygen_image_is_a_setting() -> None:
    spec = load_spec({f"minicluster:{k}": v for k, v in config(keygenImage="fluxrm/flux-core:noble").items()}, "dev")
    assert manifests.keygen_pod(spec, "B", "E")["spec"]["containers"][0]["image"] == "fluxrm/flux-core:noble"
