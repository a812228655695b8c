"""What runs beside a worker's broker (worker.sh): the watch of its link to rank 0 (watch_parent_link),
which restarts a broker that missed messages or lost its parent and speaks to rank 0 when the link comes
back, the undrain of its rank beside it, and the end of every process a broker leaves behind.

The real entrypoint under bash with the stand-in `flux` (a broker that runs until told to stop, whose
log says what the test gives it); what Flux logs and does is tested on real Flux
(tests/realflux/test_real_worker_rejoin.py, test_real_interior_worker.py).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.pods import Pods, argvs, calls_of, starts, stop, wait_for

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


def test_a_worker_whose_undrain_cannot_reach_rank0_still_ends_a_broker_that_lost_its_parent(tmp_path: Path) -> None:
    """A network cut just as the broker came up: the read of its drain mark fails until the broker ends.
    With the watch behind the undrain, a worker with workers below it hung, Ready, turned away by rank 0."""
    pods = Pods(tmp_path, command=None)
    worker, log = pods.start(1, STANDIN_START_BLOCK="1", STANDIN_START_READY_CALLS="1", STANDIN_EXITS_KVS="1",
                             STANDIN_DMESG=PARENT_LOST["turned away"])  # fmt: skip
    wait_for(lambda: starts(log) == 2, "the broker to be killed and started again")
    run = stop((worker, log))
    assert "the broker lost its parent (dev-0 (rank 0) sent disconnect control message)" in run.stderr


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
