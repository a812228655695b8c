"""The real entrypoint as a MiniCluster's pods: local processes under bash, one per rank, sharing the
files the Job mounts (built by the same builders), with stand-in `flux` and `sleep` at the process
edge. Used by the entrypoint tests and by tests/bench/stop.py.
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
from tests.standins import saved_instance

ROOT = Path(__file__).resolve().parent.parent
STANDINS = ROOT / "tests" / "standins"
SCRIPTS = ROOT / "flux_minicluster" / "builders" / "scripts"
ENTRYPOINT = "entrypoint.sh"


@dataclass
class Run:
    status: int
    stderr: str
    calls: list[dict[str, Any]]
    sleeps: list[str]

    def subcommand(self, name: str) -> list[list[str]]:
        return [call["argv"] for call in self.calls if call.get("argv", [])[:1] == [name]]

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
    """The stand-ins, run by this interpreter (so a test may shadow python3 itself)."""
    bin_dir.mkdir()
    for standin in STANDINS.iterdir():
        text = standin.read_text().replace("#!/usr/bin/env python3", f"#!{interpreter}", 1)
        (bin_dir / standin.name).write_text(text)
        (bin_dir / standin.name).chmod(0o755)
    return bin_dir


# -- stopping: SIGTERM as the kubelet sends it ----------------------------------------------------

BLOCK = {"STANDIN_START_BLOCK": "1"}
SAVED = {**BLOCK, "STANDIN_SAVED_INSTANCE": "1"}
"""A broker that keeps its instance in its statedir (tests/standins/saved_instance.py)."""


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


def starts(log: Path) -> int:
    return sum(1 for call in calls_of(log) if call.get("argv", [""])[0] == "start")


def instance_up(log: Path) -> bool:
    """A saved-instance broker (SAVED) has its instance up: it answers, and it stops cleanly."""
    return any(call.get("instance") == "up" for call in calls_of(log))


def stop(started: tuple[subprocess.Popen[str], Path], saved: bool = False) -> tuple[Run, float]:
    """SIGTERM to the entrypoint once its broker runs (with `saved`, a SAVED broker: once its instance is
    up), as the kubelet sends it; and how long it took to exit."""
    process, log = started
    wait_for(lambda: starts(log) > 0, "the broker to start")
    if saved:
        wait_for(lambda: instance_up(log), "the instance to be up")
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    run = Pods.wait(started)
    return run, time.monotonic() - sent


# -- a persistent instance whose rank 0 keeps its state on a volume ------------------------------


class SavedInstance:
    """A persistent MiniCluster of 4 brokers whose rank 0 keeps its state on a volume."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.pods = Pods(tmp, command=None)
        self.volume = tmp / "volume"
        self.volume.mkdir()
        self.saved = self.volume / "dev"  # the statedir: <volume>/<name>
        self.pods_started = 0

    @property
    def pod_dir(self) -> Path:
        """The latest rank 0 pod's own state directory (an emptyDir: each pod has a new one)."""
        return self.tmp / f"rank0-pod-{self.pods_started}"

    def start_rank0(self, **env: str) -> tuple[subprocess.Popen[str], Path]:
        self.pods_started += 1
        return self.pods.start(0, **SAVED, MC_STATE_VOLUME=str(self.volume), MC_STATE_DIR=str(self.pod_dir), **env)

    def flux(self, *args: str) -> str:
        """A command a user runs in rank 0's container (kubectl exec), through the broker's socket."""
        env = {**os.environ, "FLUX_URI": f"local://{self.pod_dir}/run/local", "STANDIN_SAVED_INSTANCE": "1",
               "STANDIN_LOG": str(self.tmp / "user.jsonl"), "MC_STATE_DIR": str(self.tmp / "user")}  # fmt: skip
        (self.tmp / "user").mkdir(exist_ok=True)
        done = subprocess.run([str(self.pods.bin / "flux"), *args], env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    def state(self) -> dict[str, Any]:
        """The saved instance, read as a transaction (never a write half-done)."""
        with saved_instance.transaction(str(self.saved)):
            state: dict[str, Any] = json.loads((self.saved / "content.sqlite").read_text())
        return state

    def jobs(self) -> dict[str, tuple[str, str]]:
        return {job["id"]: (job["state"], job.get("note", "")) for job in self.state()["jobs"]}

    def busy(self, **env: str) -> tuple[subprocess.Popen[str], Path]:
        """Rank 0 up, with two jobs running on all four nodes and two waiting."""
        started = self.start_rank0(**env)
        wait_for(lambda: instance_up(started[1]), "the instance to be up")
        for _ in range(4):
            self.flux("submit", "-N", "2", "sleep", "inf")
        assert [state for state, _ in self.jobs().values()] == ["RUN", "RUN", "SCHED", "SCHED"]
        return started
