"""A replaced rank 0 (issue 18): what is the scripts' and Kubernetes' own part. The instance's
restart from the state volume, on real Flux, is tests/realflux/test_real_rank0_replacement.py.

The real entrypoint under bash with the stand-in `flux` (a broker that runs until told to stop), for
the worker's retry budget and the signals the broker inherits; the rest reads the rendered Job.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from flux_minicluster.builders import manifests
from flux_minicluster.config import lifecycle
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.conftest import config
from tests.pods import BLOCK, Pods, starts, stop, wait_for

NOTE = lifecycle.HAND_OVER_NOTE


def test_a_worker_that_had_joined_rejoins_with_a_fresh_budget_when_rank0_is_killed(tmp_path: Path) -> None:
    pods = Pods(tmp_path, command=None, workerRetries=1)  # without the fresh budget: no second start
    worker, log = pods.start(1, STANDIN_START_BLOCK="1", STANDIN_START_UNTIL=str(tmp_path / "never"),
                             STANDIN_EXITS_START="0")  # fmt: skip
    wait_for(lambda: starts(log) == 1, "the worker's broker")
    (tmp_path / "state-1" / "ready").write_text((tmp_path / "state-1" / "broker.pid").read_text())  # the probe said so
    broker = int((tmp_path / "state-1" / "broker.pid").read_text())
    os.kill(broker, signal.SIGKILL)  # what losing its parent does to a broker: it exits non-zero
    wait_for(lambda: starts(log) == 2, "the broker to start again")
    run = stop((worker, log))
    assert "after it had joined the instance: rejoining rank 0's replacement" in run.stderr
    assert "giving up" not in run.stderr


def test_a_readiness_word_on_another_broker_does_not_make_a_broker_count_as_joined(tmp_path: Path) -> None:
    """The probe found the broker before up just as it ended, and wrote so after it was cleared."""
    pods = Pods(tmp_path, command=None, workerRetries=2)
    worker, log = pods.start(1, **BLOCK)
    wait_for(lambda: starts(log) == 1, "the worker's broker")
    state = tmp_path / "state-1"
    (state / "ready").write_text(f"{int((state / 'broker.pid').read_text()) + 100000}\n")  # not this broker
    os.kill(int((state / "broker.pid").read_text()), signal.SIGKILL)
    wait_for(lambda: starts(log) == 2, "the broker to start again")
    run = stop((worker, log))
    assert "try 2/2 in 1s" in run.stderr  # the budget's pause: it had not joined
    assert "after it had joined the instance" not in run.stderr


def test_a_container_started_again_in_its_pod_does_not_take_the_last_ones_broker_for_its_own(
    tmp_path: Path,
) -> None:
    """restartPolicy OnFailure: the state volume keeps what the container before left, the pid of its
    broker (which this container's broker may get again) and the probe's word that it was up. From the
    pre hook on, before this container's broker starts, the probe must not say Ready."""
    said = tmp_path / "probe-said"
    pods = Pods(
        tmp_path, command=None, hooks={"pre": f'bash "$MC_RUN_CONFIG_DIR/entrypoint.sh" --ready; echo $? > {said}'}
    )
    state = tmp_path / "state-1"
    state.mkdir()
    for name in ("broker.pid", "ready"):
        (state / name).write_text("1\n")  # a pid that is alive here, as a pid of the last container may be
    run = pods.run(1, MC_READY_LOOKS="1")
    assert run.status == 0
    assert said.read_text() == "1\n"


def test_a_worker_that_had_joined_keeps_trying_beyond_its_budget_while_rank0s_replacement_may_still_come(
    tmp_path: Path,
) -> None:
    """lifecycle.REJOIN_WAIT: a worker that gives up fails its pod, and with the default backoffLimit the Job."""
    pods = Pods(tmp_path, command=None, workerRetries=2)
    joined_then_alone = {"STANDIN_START_READY_CALLS": "1", "STANDIN_EXITS_START": "1 1 1 1 1 0"}
    within = pods.run(1, **joined_then_alone)  # the second to fifth starts never reach rank 0
    assert (within.status, len(within.subcommand("start"))) == (0, 6)
    assert within.sleeps == ["sleep 1", "sleep 2", "sleep 4", "sleep 8"]  # the first start again at once
    assert "giving up" not in within.stderr
    (tmp_path / "past").mkdir()
    past = Pods(tmp_path / "past", command=None, workerRetries=2).run(1, MC_REJOIN_WAIT="0", **joined_then_alone)
    assert (past.status, len(past.subcommand("start"))) == (1, 3)  # the joined one, then the budget of two
    assert "giving up after 2 tries" in past.stderr


def test_the_readiness_probe_asks_the_entrypoint_every_few_seconds() -> None:
    container = manifests.job(load_spec_of(command=None), **NAMES)["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"] == {
        "exec": {"command": ["/bin/bash", "/etc/minicluster/run/entrypoint.sh", "--ready"]},
        "periodSeconds": 2,
        "timeoutSeconds": 10,
    }


# -- one broker per saved instance: Kubernetes' part --------------------------------------------------


def test_a_lost_pod_is_replaced_only_once_it_is_gone() -> None:
    for restart_policy in ("Never", "OnFailure"):  # OnFailure has no podFailurePolicy, so no such default
        job = manifests.job(load_spec_of(pod={"restartPolicy": restart_policy}), **NAMES)
        assert job["spec"]["podReplacementPolicy"] == "Failed"


# -- the broker runs as a foreground command would ------------------------------------------------


def test_the_background_broker_does_not_inherit_the_signals_bash_ignores_in_background_commands(
    tmp_path: Path,
) -> None:
    foreground = subprocess.run(["bash", "-c", "grep SigIgn /proc/self/status"], capture_output=True, text=True)
    (start,) = [call for call in Pods(tmp_path).run(1).calls if call["argv"][0] == "start"]
    python_own = bit(signal.SIGPIPE) | bit(signal.SIGXFSZ)  # the stand-in broker is Python, which ignores these
    # Equal to a foreground command's: SIGINT and SIGQUIT free (unless this test's own parent ignored them).
    assert int(start["ignored_signals"], 16) & ~python_own == int(foreground.stdout.split()[1], 16)


def bit(signum: int) -> int:
    return 1 << (signum - 1)


NAMES = {"service_name": "svc", "curve_secret_name": "curve", "broker_config_name": "broker",
         "entrypoint_name": "entrypoint", "scale_config_name": "scale"}  # fmt: skip


def load_spec_of(**overrides: Any) -> MiniClusterSpec:
    return load_spec({f"minicluster:{key}": value for key, value in config(**overrides).items()}, "dev")
