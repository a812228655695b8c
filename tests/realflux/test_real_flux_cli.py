"""What flux-core's own commands do at an edge the project meets, pinned on real Flux because the docs
and the soak rely on it: where flux-core changes it, this fails, and what relies on it changes too."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.flux_instance import flux_env
from tests.kubelet.image import FLUX
from tests.kubelet.pod import wait_until

pytestmark = pytest.mark.realflux

UNANSWERED = '#!/bin/bash\n: >"$0.asked"\nwhile read -r _; do :; done\n'
"""A job validator that reads each job and never answers. Flux's job-ingest starts `flux job-validator`,
found on Flux's command path, when a submission comes, and holds the submission until it answers. It
keeps its stdout open: job-ingest takes the end of a validator's stdout for the end of the validator."""


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["stopped", "killed"])
def test_a_submission_in_flight_when_its_broker_stops_exits_0_and_prints_no_job_id(
    real_flux: None, tmp_path: Path, stop: signal.Signals
) -> None:
    """Rank 0's hand-over stops its broker (SIGTERM), and a user's `flux submit` may be in flight then:
    the soak met one. flux-core 0.88's leaves its reactor when the connection closes, with no answer
    and no error. Whether the job was taken is not known: docs/lost-pods.md says to take an empty id as
    a failed submission, and the soak counts it apart (tests/soak/records.py)."""
    validator = tmp_path / "flux-job-validator"
    validator.write_text(UNANSWERED)
    validator.chmod(0o755)
    uri = f"local://{tmp_path}/local"
    env = flux_env({"FLUX_URI": uri, "FLUX_EXEC_PATH_PREPEND": str(tmp_path)})
    program = tmp_path / "program.pid"  # the instance's initial program outlives a killed broker
    initial_program = ["bash", "-c", f"echo $$ >{program}; exec sleep inf"]
    broker = subprocess.Popen([str(FLUX), "start", f"-Slocal-uri={uri}", *initial_program], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        up = [str(FLUX), "queue", "status"]
        wait_until(lambda: subprocess.run(up, env=env, capture_output=True).returncode == 0, "the instance", 30, 0.1)
        submit = subprocess.Popen([str(FLUX), "submit", "true"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)  # fmt: skip
        wait_until(Path(f"{validator}.asked").exists, "the job to be in validation", 30)
        broker.send_signal(stop)  # `flux start` runs the broker in its own process
        said, error = submit.communicate(timeout=30)
        assert (submit.returncode, said, error) == (0, "", "")
    finally:
        broker.kill()
        broker.wait()
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            os.kill(int(program.read_text()), signal.SIGKILL)
