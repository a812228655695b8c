"""The real entrypoint as a MiniCluster's pods: local processes under bash, one per rank, sharing the
files the Job mounts (built by the same builders), with stand-in `flux` and `sleep` at the process
edge: for the scripts' own logic (arguments, exit codes, retries, signals) in milliseconds. What Flux
does with them is tested on real brokers (tests/kubelet).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flux_minicluster.builders import files, manifests
from flux_minicluster.config import certificate, paths
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.conftest import config

ROOT = Path(__file__).resolve().parent.parent
STANDINS = ROOT / "tests" / "standins"
ENTRYPOINT = "entrypoint.sh"


@dataclass
class Run:
    status: int
    stderr: str
    calls: list[dict[str, Any]]
    sleeps: list[str]

    def subcommand(self, name: str) -> list[list[str]]:
        return argvs(self.calls, name)

    @property
    def start(self) -> list[str]:
        (argv,) = self.subcommand("start")
        return argv


class Pods:
    """A MiniCluster's pods as local processes sharing the mounted files."""

    def __init__(self, tmp: Path, secret_keys: tuple[str, ...] = (), user: int | None = None, **overrides: Any) -> None:
        """`user`: the id the scripts run as (with it as their group too), as a pod's runAsUser; else this
        process's own."""
        self.tmp, self.user = tmp, user
        self.logs = tmp / "standin-logs"  # the stand-ins' records: the test's, outside the pod
        self.logs.mkdir(mode=0o777)
        self.logs.chmod(0o777)
        raw = {f"minicluster:{k}": v for k, v in config(**overrides).items()}
        self.spec: MiniClusterSpec = load_spec(raw, "dev", [f"minicluster:{key}" for key in secret_keys])
        self.cert = certificate.generate(self.spec.rank0_host)
        run_dir, broker_dir, curve_dir, scale_dir = tmp / "run", tmp / "broker", tmp / "curve", tmp / "scale"
        for directory, contents in (
            # One directory, as the projected volume makes it: the ConfigMap's files and the secret ones.
            (run_dir, {**manifests.run_config_files(self.spec), **files.secret_run_files(self.spec)}),
            (scale_dir, manifests.scale_config_map(self.spec)["data"]),
            (broker_dir, {manifests.BROKER_CONFIG_KEY: manifests.broker_toml(self.spec)}),
            (curve_dir, {manifests.CURVE_CERT_KEY: self.cert.text()}),
        ):
            directory.mkdir()
            for name, text in contents.items():
                (directory / name).write_text(text)
        (curve_dir / manifests.CURVE_CERT_KEY).chmod(0o444)  # Secret mounts are read-only
        self.env = {item["name"]: item["value"] for item in manifests.entrypoint_env(self.spec) if "value" in item}
        self.bin = install_standins(tmp / "bin", sys.executable if user is None else SYSTEM_PYTHON)
        self.env.update(
            MC_RUN_CONFIG_DIR=str(run_dir),
            MC_BROKER_CONFIG_DIR=str(broker_dir),
            MC_CURVE_CERT_SOURCE=str(curve_dir / manifests.CURVE_CERT_KEY),
            MC_SCALE_DIR=str(scale_dir),
        )

    @property
    def run_dir(self) -> Path:
        """The pod's run-config directory: the scripts, as the pod mounts them."""
        return self.tmp / "run"

    def run(self, rank: int, *args: str, script: str = ENTRYPOINT, **options: Any) -> Run:
        return self.wait(self.start(rank, *args, script=script, **options))

    def start(
        self,
        rank: int,
        *args: str,
        hostname: str | None = None,
        index: str | None = None,
        script: str = ENTRYPOINT,
        **env: str,
    ) -> tuple[subprocess.Popen[str], Path]:
        """`script` (a file of the run-config directory) as it runs in rank `rank`'s pod."""
        log = self.logs / f"calls-{rank}-{len(list(self.logs.glob('calls-*')))}.jsonl"
        state = self.tmp / f"state-{rank}"
        process_env = {
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "HOME": str(self.tmp),
            **self.env,
            "MC_STATE_DIR": str(state),
            "HOSTNAME": hostname or self.spec.host(rank),
            "JOB_COMPLETION_INDEX": str(rank) if index is None else index,
            "STANDIN_LOG": str(log),
            **env,
        }
        # The files the Job places under the state directory, in this pod's own one.
        here = process_env["MC_STATE_DIR"]
        for key, value in self.env.items():
            if key not in env and key != "MC_STATE_DIR" and f"{paths.STATE_DIR}/" in value:
                process_env[key] = value.replace(f"{paths.STATE_DIR}/", f"{here}/")
        process = subprocess.Popen(
            ["bash", str(self.run_dir / script), *args], env=process_env, stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL, text=True, cwd=self.tmp, user=self.user, group=self.user,
            extra_groups=None if self.user is None else [self.user],
        )  # fmt: skip
        return process, log

    @staticmethod
    def wait(started: tuple[subprocess.Popen[str], Path]) -> Run:
        process, log = started
        _, stderr = process.communicate(timeout=30)
        calls = calls_of(log)
        sleeps_file = Path(f"{log}.sleep")
        sleeps = sleeps_file.read_text().splitlines() if sleeps_file.exists() else []
        return Run(process.returncode, stderr, calls, sleeps)


SYSTEM_PYTHON = "/usr/bin/python3"
"""For stand-ins run by another user: the venv's interpreter may live in a home only root may enter."""


def install_standins(bin_dir: Path, interpreter: str = sys.executable) -> Path:
    """The stand-ins, run by this interpreter (so a test may shadow python3 itself); not the bytecode
    folder that Python writes beside them when one imports another."""
    bin_dir.mkdir()
    for standin in (path for path in STANDINS.iterdir() if path.is_file()):
        text = standin.read_text().replace("#!/usr/bin/env python3", f"#!{interpreter}", 1)
        (bin_dir / standin.name).write_text(text)
        (bin_dir / standin.name).chmod(0o755)
    return bin_dir


# -- stopping: SIGTERM as the kubelet sends it ----------------------------------------------------

BLOCK = {"STANDIN_START_BLOCK": "1"}


def wait_for(condition: Any, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def calls_of(log: Path) -> list[dict[str, Any]]:
    """The calls recorded so far. Read while stand-ins still write: a last line without its newline is
    still being written, and is left for the next read."""
    text = log.read_text() if log.exists() else ""
    return [json.loads(line) for line in text.split("\n")[:-1]]


def argvs(calls: list[dict[str, Any]], name: str) -> list[list[str]]:
    """The argv of each call of `flux NAME` among `calls` (a signal the broker took is recorded too, with none)."""
    return [call["argv"] for call in calls if call.get("argv", [])[:1] == [name]]


def starts(log: Path) -> int:
    return len(argvs(calls_of(log), "start"))


def stop(started: tuple[subprocess.Popen[str], Path]) -> Run:
    """SIGTERM to the entrypoint once its broker runs, as the kubelet sends it; what it did till it
    exited."""
    process, log = started
    wait_for(lambda: starts(log) > 0, "the broker to start")
    process.send_signal(signal.SIGTERM)
    return Pods.wait(started)
