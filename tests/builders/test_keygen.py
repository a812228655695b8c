"""The keygen pod's manifest (a pure builder). Its run is tested in tests/cluster/test_keygen_pod.py, against the
local API stand-in, and the providers in tests/resources/test_certificate_providers.py, over gRPC."""

from __future__ import annotations

import re

from flux_minicluster.builders import keygen
from flux_minicluster.config.loader import load_spec
from tests.conftest import IMAGE, config

SPEC = load_spec({f"minicluster:{k}": v for k, v in config().items()}, "dev")
POD = keygen.keygen_pod(SPEC)


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


def test_the_certificate_waits_in_a_memory_volume_never_in_the_log() -> None:
    (container,) = POD["spec"]["containers"]
    assert {"name": "MC_CERT_FILE", "value": "/var/run/minicluster-keygen/curve.cert"} in container["env"]
    assert container["volumeMounts"] == [{"name": "keygen", "mountPath": "/var/run/minicluster-keygen"}]
    assert POD["spec"]["volumes"] == [{"name": "keygen", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}]
    script = container["command"][2]
    assert not re.search(r"\b(cat|head|tail|echo \"\$MC_CERT_FILE)", script)  # nothing prints the certificate
    assert 'exec sleep "$MC_HOLD_SECONDS"' in script  # it waits to be read and deleted


def test_keygen_image_is_a_setting() -> None:
    spec = load_spec({f"minicluster:{k}": v for k, v in config(keygenImage="fluxrm/flux-core:noble").items()}, "dev")
    assert keygen.keygen_pod(spec)["spec"]["containers"][0]["image"] == "fluxrm/flux-core:noble"
