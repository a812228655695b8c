"""The stand-in `flux` the test kubelet's image carries where flux-core is not installed
(tests/kubelet/image.py): its keygen and its brokers are as strict as Flux's where the engine tier
relies on them (a real key pair, the certificate's mode, the instance's shutdown reaching every rank,
the log line the readiness probe reads)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from flux_minicluster.config import certificate
from tests.kubelet.image import STANDIN_PYTHON, STANDINS


def flux(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [STANDIN_PYTHON, str(STANDINS / "flux"), *args], env={**os.environ, "STANDIN_INSTANCE": "1", **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finished(process: subprocess.Popen[str]) -> tuple[int, str]:
    out, err = process.communicate(timeout=30)
    return process.returncode, out + err


@pytest.fixture
def instance(tmp_path: Path) -> Path:
    """broker.toml of an instance of three on loopback, and its certificate, made by the stand-in's keygen."""
    assert finished(flux("keygen", "--name=t-0", str(tmp_path / "cert")))[0] == 0
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "broker.toml").write_text(
        f'[bootstrap]\ncurve_cert = "{tmp_path / "cert"}"\ndefault_port = {port}\ndefault_bind = "tcp://lo:%p"\n'
        'default_connect = "tcp://127.0.0.1:%p"\nhosts = [ { host = "t-[0-2]" } ]\n'
    )
    return tmp_path


def broker(instance: Path, rank: int, *program: str) -> subprocess.Popen[str]:
    return flux("start", f"-o,--config-path={instance / 'conf'}", f"-Shostname=t-{rank}",
                f"-Srundir={instance / f'run{rank}'}", *program)  # fmt: skip


def test_keygen_writes_a_private_certificate_whose_keys_are_a_real_pair(tmp_path: Path) -> None:
    assert finished(flux("keygen", "--name=dev-0", str(tmp_path / "cert"))) == (0, "")
    assert (tmp_path / "cert").stat().st_mode & 0o777 == 0o600
    made = certificate.parse((tmp_path / "cert").read_text())  # checks the pair with libsodium's maths
    assert made.name == "dev-0"


def test_rank_0_runs_its_program_once_every_rank_is_online_and_the_workers_exit_0_at_its_end(instance: Path) -> None:
    workers = [broker(instance, rank) for rank in (1, 2)]
    leader = broker(instance, 0, "sh", "-c", "echo the program ran; exit 3")
    assert finished(leader) == (3, "the program ran\n")
    assert [finished(worker) for worker in workers] == [(0, ""), (0, "")]
    for rank in range(3):  # what the readiness probe looks for in `flux dmesg`
        uri = f"local://{instance / f'run{rank}' / 'local'}"
        code, said = finished(flux("dmesg", env={"FLUX_URI": uri}))
        assert code == 0 and f"broker.info[{rank}]: quorum-full: quorum->run " in said


def test_a_certificate_others_may_read_is_refused(instance: Path) -> None:
    (instance / "cert").chmod(0o644)
    code, said = finished(broker(instance, 1))
    assert code == 1 and "readable by group or other" in said


def test_a_host_not_in_the_hostlist_is_refused(instance: Path) -> None:
    code, said = finished(flux("start", f"-o,--config-path={instance / 'conf'}", "-Shostname=t-7"))
    assert code == 1 and "t-7 not found in bootstrap hosts" in said
