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

import pytest

from flux_minicluster.builders import manifests
from flux_minicluster.config import lifecycle
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.conftest import config
from tests.pods import BLOCK, Pods, argvs, calls_of, starts, stop, wait_for

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


LOST_EVENTS = "2026-11-28T16:10:46.769023Z overlay.err[1]: lost events 97-169"
"""What Flux's overlay logs on a worker that missed events from its parent (a connection closed in a cut)."""


def test_a_worker_whose_broker_missed_messages_from_rank0_restarts_it(tmp_path: Path) -> None:
    pods = Pods(tmp_path, command=None)
    worker, log = pods.start(1, STANDIN_START_BLOCK="1", STANDIN_START_READY_CALLS="1", STANDIN_DMESG=LOST_EVENTS)
    wait_for(lambda: starts(log) == 2, "the broker to be killed and started again")
    run = stop((worker, log))
    assert "the broker missed messages from rank 0 (lost events 97-169): restarting it" in run.stderr
    assert "broker exited with status 137 after it had joined the instance: rejoining" in run.stderr
    assert starts(log) == 2  # the second broker has not been up: nothing watches it yet


PARENT_LOST = {
    "turned away": "2026-11-28T21:31:02.118823Z overlay.crit[1]: dev-0 (rank 0) sent disconnect control message",
    "no heartbeat": "2026-11-28T21:31:02.118823Z overlay.crit[1]: disconnecting: no heartbeat for 1m",
}
"""What Flux's overlay logs on a worker that lost its parent: turned away by it, or silent for too long."""


@pytest.mark.parametrize("lost", PARENT_LOST.values(), ids=PARENT_LOST.keys())
def test_a_worker_whose_broker_lost_its_parent_ends_it_at_once(tmp_path: Path, lost: str) -> None:
    """Flux's own way out would wait for a goodbye from every broker below, which a cut may have taken."""
    pods = Pods(tmp_path, command=None)
    worker, log = pods.start(1, STANDIN_START_BLOCK="1", STANDIN_START_READY_CALLS="1", STANDIN_DMESG=lost)
    wait_for(lambda: starts(log) == 2, "the broker to be killed and started again")
    run = stop((worker, log))
    assert f"the broker lost its parent ({lost.rsplit(': ', 1)[1]}): ending it at once" in run.stderr
    assert "broker exited with status 137 after it had joined the instance: rejoining" in run.stderr


def test_a_worker_whose_broker_logs_no_loss_keeps_it(tmp_path: Path) -> None:
    pods = Pods(tmp_path, command=None)
    quiet = "2026-11-28T16:10:46.946458Z heartbeat.warning[1]: heartbeat received"
    worker, log = pods.start(1, STANDIN_START_BLOCK="1", STANDIN_START_READY_CALLS="1", STANDIN_DMESG=quiet)
    wait_for(lambda: any(argv[:2] == ["dmesg", "--follow"] for argv in argvs(calls_of(log), "dmesg")), "the watch")
    run = stop((worker, log))
    assert starts(log) == 1
    assert "missed messages" not in run.stderr


def test_a_broker_ended_by_the_watch_takes_every_process_under_it_along(tmp_path: Path) -> None:
    """Flux's rc scripts and job shells each run in a process group of their own: an rc3 that outlived
    its broker removed modules from the next one, which has the same socket path."""
    pids = tmp_path / "rc3-pids"
    pods = Pods(tmp_path, command=None)
    worker, log = pods.start(1, STANDIN_START_BLOCK="1", STANDIN_START_READY_CALLS="1", STANDIN_START_CHILD=str(pids),
                             STANDIN_DMESG=PARENT_LOST["turned away"])  # fmt: skip
    wait_for(lambda: starts(log) == 2, "the broker to be killed and started again")
    child, grandchild = (int(pid) for pid in pids.read_text().split())
    assert os.getpgid(child) != os.getpgid(worker.pid)
    wait_for(lambda: not alive(child) and not alive(grandchild), "the first broker's processes to be gone")
    stop((worker, log))


def test_what_a_broker_that_died_on_its_own_left_running_is_ended_before_the_next_one_starts(
    tmp_path: Path,
) -> None:
    """An OOM kill or a crash ends the broker alone: its rc scripts and job shells run on, and a job's
    task holds the node (and its GPUs) that Flux gives to the next job."""
    pids = tmp_path / "children"
    pods = Pods(tmp_path, command=None)
    worker, log = pods.start(1, STANDIN_START_BLOCK="1", STANDIN_START_READY_CALLS="1", STANDIN_START_CHILD=str(pids))
    wait_for(lambda: pids.exists() and starts(log) == 1, "the broker and its processes")
    child, grandchild = (int(pid) for pid in pids.read_text().split())
    os.kill(int((tmp_path / "state-1" / "broker.pid").read_text()), signal.SIGKILL)
    wait_for(lambda: starts(log) == 2, "the broker to start again")
    wait_for(lambda: not alive(child) and not alive(grandchild), "the first broker's processes to be gone")
    run = stop((worker, log))
    assert "ended what the broker left running: 2 processes" in run.stderr
    assert run.stderr.count("ended what the broker left running") == 1  # the second broker left nothing


def alive(pid: int) -> bool:
    """Running, or stopped: not gone and not a zombie waiting for its parent."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


SOCKET = "overlay.debug[1]: parent sockevent tcp://dev-0.dev.default.svc.cluster.local:8050"
"""How Flux's overlay begins a line on an event of a worker's socket to rank 0 (broker.toml's tbon.zmqdebug)."""
CONNECTED = f"{SOCKET} connected\n{SOCKET} handshake succeeded"
CLOSED = f"{SOCKET} disconnected\n{SOCKET} connect retried\n{SOCKET} closed"


def pings(log: Path) -> list[list[str]]:
    return argvs(calls_of(log), "ping")


def test_a_worker_whose_link_to_rank0_comes_back_speaks_to_rank0_at_once(tmp_path: Path) -> None:
    """A replaced rank 0 turns away a broker it does not know when it hears from it: at once, rather than
    at Flux's next keepalive, up to 10 s later (the soak's killed rank 0)."""
    pods = Pods(tmp_path, command=None)
    back = "\n".join([CONNECTED, CLOSED, CONNECTED])
    worker, log = pods.start(1, STANDIN_START_BLOCK="1", STANDIN_START_READY_CALLS="1", STANDIN_DMESG=back)
    wait_for(lambda: pings(log), "a word to rank 0")
    run = stop((worker, log))
    assert pings(log) == [["ping", "--count=1", "0"]]  # once, for the one time the link came back
    assert "the link to the parent broker is back: pinging rank 0 through it" in run.stderr
    assert starts(log) == 1  # a rank 0 that is still the same one just answers: the broker stays


def test_a_worker_whose_link_only_came_up_says_nothing_to_rank0(tmp_path: Path) -> None:
    pods = Pods(tmp_path, command=None)
    read_through = f"{CONNECTED}\n{LOST_EVENTS}"  # the restart it ends with says the watch read the whole log
    worker, log = pods.start(1, STANDIN_START_BLOCK="1", STANDIN_START_READY_CALLS="1", STANDIN_DMESG=read_through)
    wait_for(lambda: starts(log) == 2, "the broker to be killed and started again")
    run = stop((worker, log))
    assert pings(log) == []
    assert "link to the parent broker is back" not in run.stderr


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
