"""One pod of the test kubelet, once started: its Flux container and its native sidecars, each a
Container. `exec` is `kubectl exec` (into the Flux container unless told which), `ready` runs the
readiness probe, `terminate` is the kubelet's stop: SIGTERM to the Flux container, SIGKILL after the
grace period, then the sidecars' stop, in reverse order, once it has ended (as Kubernetes stops native
sidecars after the main containers)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from flux_minicluster.builders import manifests
from tests.kubelet.volumes import Manifest

DEFAULT_GRACE_SECONDS = 30
"""A pod's terminationGracePeriodSeconds when its spec sets none (Kubernetes' default)."""


def wait_until(condition: Any, what: str, timeout: float, poll: float = 0.02) -> Any:
    """Until `condition()` holds; what it returned then."""
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(poll)
    return found


class Container:
    """One running container: its first process (PID 1 of its own PID namespace), its log, and how to
    enter it (its namespaces, its user, its environment)."""

    def __init__(self, name: str, process: subprocess.Popen[bytes], log: Path, exec_prefix: list[str]) -> None:
        self.name, self.process, self.log_path, self.exec_prefix = name, process, log, exec_prefix
        self._pid: int | None = None

    @property
    def pid(self) -> int:
        """The host's id of the container's first process (unshare forks it: PID 1 in the container)."""
        if self._pid is None:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
            wait_until(lambda: self.process.poll() is not None or children.read_text().strip(), "PID 1", 10)
            found = children.read_text().split() if self.process.poll() is None else []
            if not found:
                raise RuntimeError(f"container {self.name} exited before it started:\n{self.log}")
            self._pid = int(found[0])
        return self._pid

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def exec(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """`kubectl exec POD -c NAME -- ARGV`: in the container's namespaces, with its env, as its user."""
        command = ["nsenter", f"--target={self.pid}", "--mount", "--uts", "--net", "--pid", "--", *self.exec_prefix]
        return subprocess.run([*command, *argv], capture_output=True, text=True, timeout=timeout)

    def running(self) -> bool:
        return self.process.poll() is None

    def signal(self, signum: int) -> None:
        try:
            pid = self.pid
        except RuntimeError:  # it ended before its first process could be found: nothing left to signal
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    def wait(self, timeout: float | None = 60) -> int:
        """The container's exit code as Kubernetes reports it (128 + the signal, when one killed it)."""
        status = self.process.wait(timeout=timeout)
        return 128 - status if status < 0 else status

    def stop(self, grace: float) -> int:
        """SIGTERM to PID 1, SIGKILL once the grace period is over."""
        self.signal(signal.SIGTERM)
        try:
            return self.wait(grace)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.wait(10)

    def kill(self) -> None:
        """SIGKILL to PID 1: the kernel kills every process of the container's PID namespace with it."""
        if self.running():
            self.signal(signal.SIGKILL)


class ProbeRun(NamedTuple):
    """One run of a readiness probe: when it started and answered (time.monotonic()), and what."""

    started: float
    answered: float
    said: bool


class Pod:
    """One pod of the Job: its Flux container and the native sidecars that run beside it."""

    def __init__(self, name: str, hostname: str, main: Container, probe: Manifest, sidecars: list[Container]) -> None:
        self.name, self.hostname, self.main, self.sidecars = name, hostname, main, sidecars
        self.process, self.log_path = main.process, main.log_path
        self.probe: Manifest = probe
        self.at_gate = main.log_path.parent / "scratch" / "at-gate"  # container.sh is set up, waiting to start
        self.started = time.monotonic()

    def container(self, name: str) -> Container:
        return next(container for container in [self.main, *self.sidecars] if container.name == name)

    @property
    def pid(self) -> int:
        return self.main.pid

    @property
    def log(self) -> str:
        return self.main.log

    def exec(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return self.main.exec(*argv, timeout=timeout)

    def flux(self, *args: str, timeout: float = 30) -> str:
        """A flux command run in the container against this pod's broker; its stdout. Fails if it fails."""
        done = self.exec("env", f"FLUX_URI={manifests.LOCAL_URI}", "flux", *args, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"flux {' '.join(args)} in {self.name} exited {done.returncode}: {done.stderr}")
        return done.stdout

    def usable_ranks(self, timeout: float = 30) -> str:
        """The ranks this pod's broker (rank 0's) sees online and not drained, as an idset ("" for none).
        `flux resource status -s avail` alone lists an offline rank too, where it is not drained."""
        listing = self.flux("resource", "status", "-no", "{state} {status} {ranks}", timeout=timeout)
        groups = (line.split() for line in listing.splitlines())
        return next((group[2] for group in groups if group[:2] == ["avail", "online"]), "")

    def ready(self) -> bool:
        """The readiness probe, as the kubelet runs it (its exec command, within its timeout)."""
        try:
            probe = self.exec(*self.probe["exec"]["command"], timeout=self.probe.get("timeoutSeconds", 1))
        except subprocess.TimeoutExpired:
            return False
        return probe.returncode == 0

    def probes(self) -> Iterator[ProbeRun]:
        """The readiness probe as the kubelet's worker runs it: one run each periodSeconds while the
        container runs."""
        while self.running():
            started = time.monotonic()
            said = self.ready()
            yield ProbeRun(started, time.monotonic(), said)
            time.sleep(max(0.0, started + self.probe["periodSeconds"] - time.monotonic()))

    def running(self) -> bool:
        return self.main.running()

    def signal(self, signum: int) -> None:
        self.main.signal(signum)

    def wait(self, timeout: float | None = 60) -> int:
        return self.main.wait(timeout)

    def terminate(self, grace: float = DEFAULT_GRACE_SECONDS) -> int:
        """The kubelet stopping the pod: the Flux container first, then its sidecars."""
        status = self.main.stop(grace)
        self.stop_sidecars(grace)
        return status

    def stop_sidecars(self, grace: float = DEFAULT_GRACE_SECONDS) -> None:
        """Once the main container has ended, Kubernetes stops the native sidecars, the last started first."""
        for sidecar in reversed(self.sidecars):
            if sidecar.running():
                sidecar.stop(grace)

    def kill(self) -> None:
        for container in [self.main, *self.sidecars]:
            container.kill()


def end_all(pods: list[Pod]) -> None:
    """Every container of `pods` killed at once, then each reaped (10 s at most each): what a closing
    node does with the pods it still runs."""
    for pod in pods:
        pod.kill()
    for container in [container for pod in pods for container in (pod.main, *pod.sidecars)]:
        with contextlib.suppress(subprocess.TimeoutExpired):
            container.process.wait(timeout=10)
