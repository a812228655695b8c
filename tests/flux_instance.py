"""One real Flux instance for the tests that need Flux's answers but no pods: `flux start -s N`
(Flux's own instance of N brokers on this machine), kept up by an initial program that tells its URI
and waits. Started on first use, stopped at the test process's exit."""

from __future__ import annotations

import atexit
import subprocess
import tempfile
import time
from pathlib import Path

from flux_minicluster.builders import files
from tests.kubelet.image import FLUX, HOST_PATH

READINGS = files.POD_SCRIPTS / "readings.py"
_started: dict[int, Instance] = {}


def flux_env(extra: dict[str, str]) -> dict[str, str]:
    """An environment for Flux's own commands as the pods have it: the image's PATH with this machine's
    flux-core (no shims of this machine's Python on the way), and SHLVL as a user's shell (and the
    entrypoint, for the pods' brokers) gives it: with SHLVL unset or 0, flux-core 0.88 takes a second
    longer to run `flux start -s 3 true` here (2.1 s instead of 1.0 s)."""
    return {"PATH": HOST_PATH, "HOME": "/root", "SHLVL": "1", **extra}


class Instance:
    def __init__(self, size: int) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="flux-instance-"))
        uri_file = self.directory / "uri"
        program = f'echo "$FLUX_URI" > {uri_file}.new && mv {uri_file}.new {uri_file} && exec sleep inf'
        self.process = subprocess.Popen(
            [str(FLUX), "start", "-s", str(size), "bash", "-c", program], env=self.env({}),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not uri_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"flux start -s {size} did not come up (status {self.process.poll()})")
            time.sleep(0.02)
        self.uri = uri_file.read_text().strip()
        atexit.register(self.close)

    @staticmethod
    def env(extra: dict[str, str]) -> dict[str, str]:
        return flux_env(extra)

    def run(self, *command: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """`command` against the instance (FLUX_URI set), as a user in rank 0's container would run it."""
        env = self.env({"FLUX_URI": self.uri})
        return subprocess.run(list(command), env=env, capture_output=True, text=True, timeout=timeout)

    def readings(self) -> subprocess.CompletedProcess[str]:
        return self.run(str(FLUX), "python", str(READINGS))

    def close(self) -> None:
        if self.process.poll() is None:
            self.run(str(FLUX), "shutdown", "--quiet")
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()


def instance(size: int = 4) -> Instance:
    """The instance of `size` brokers, started once per test process."""
    if size not in _started:
        _started[size] = Instance(size)
    return _started[size]
