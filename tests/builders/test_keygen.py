"""The keygen pod's manifest (a pure builder). Its run is tested in tests/cluster/test_keygen_pod.py, against the
local API stand-in, and the providers in tests/resources/test_certificate_providers.py, over gRPC."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

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


def test_the_certificate_waits_in_the_runtimes_memory_never_in_the_log() -> None:
    (container,) = POD["spec"]["containers"]
    assert {"name": "MC_CERT_FILE", "value": "/dev/shm/minicluster-curve.cert"} in container["env"]
    script = container["command"][2]
    assert not re.search(r"\b(cat|head|tail|echo \"\$MC_CERT_FILE)", script)  # nothing prints the certificate
    assert 'exec sleep "$MC_HOLD_SECONDS"' in script  # it waits to be read and deleted


def test_keygen_image_is_a_setting() -> None:
    spec = load_spec({f"minicluster:{k}": v for k, v in config(keygenImage="fluxrm/flux-core:noble").items()}, "dev")
    assert keygen.keygen_pod(spec)["spec"]["containers"][0]["image"] == "fluxrm/flux-core:noble"


def test_the_keygen_pod_has_no_volume_that_the_kubelet_would_mount_first() -> None:
    (container,) = POD["spec"]["containers"]
    assert "volumes" not in POD["spec"]
    assert "volumeMounts" not in container


def test_with_the_flux_view_the_keygen_pod_mounts_the_view_alone() -> None:
    spec = load_spec({f"minicluster:{k}": v for k, v in config(fluxView={"enabled": True}).items()}, "dev")
    pod_spec = keygen.keygen_pod(spec)["spec"]
    (container,) = pod_spec["containers"]
    assert pod_spec["volumes"] == [{"name": "flux-view", "emptyDir": {}}]
    assert {mount["name"] for mount in container["volumeMounts"]} == {"flux-view"}
    assert [init["name"] for init in pod_spec["initContainers"]] == ["flux-view"]
    assert {"name": "MC_CERT_FILE", "value": "/dev/shm/minicluster-curve.cert"} in container["env"]


def _run_script(cert_file: Path, flux: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "MC_FLUX": str(flux), "MC_CERT_NAME": "dev-0", "MC_CERT_FILE": str(cert_file),
           "MC_HOLD_SECONDS": "0"}  # fmt: skip
    return subprocess.run(["/bin/sh", "-c", keygen.KEYGEN_SCRIPT], env=env, capture_output=True, text=True, check=False)


def test_the_script_says_when_the_container_has_no_writable_memory(tmp_path: Path) -> None:
    run = _run_script(tmp_path / "missing" / "curve.cert", Path("/bin/false"))
    assert run.returncode == 1
    assert f"no writable {tmp_path / 'missing'} in the keygen container" in run.stderr


def test_the_script_moves_the_whole_certificate_into_place_and_prints_none_of_it(tmp_path: Path) -> None:
    flux = tmp_path / "flux"  # writes where `flux keygen --name=NAME PATH` writes: PATH
    flux.write_text('#!/bin/sh\nprintf "secret-key = \\"x\\"\\n" > "$3"\n')
    flux.chmod(0o755)
    run = _run_script(tmp_path / "curve.cert", flux)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "curve.cert").read_text() == 'secret-key = "x"\n'
    assert not (tmp_path / "curve.cert.new").exists()
    assert "secret-key" not in run.stdout + run.stderr
