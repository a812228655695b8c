"""A replaced rank 0 restarts the same instance from the state volume, on real Flux: its history
comes back and no queued job is lost, whether the old broker is gone before the replacement starts or
still stopping beside it (tests/kubelet runs the pods; the claim outlives them)."""

from __future__ import annotations

import fcntl
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from flux_minicluster.config import lifecycle
from tests.flux_checkpoints import checkpointed
from tests.kubelet import faults
from tests.kubelet.pod import Pod, wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
Make = Callable[..., Kubelet]
STATE = {"claimName": "flux-state", "checkpointPeriod": "1s"}


class Busy:
    """A persistent MiniCluster of 4 brokers, rank 0's state on a claim, with 2 jobs running on all four
    nodes and 2 waiting."""

    def __init__(self, minicluster: Make) -> None:
        self.cluster = minicluster(command=None, stateVolume=STATE)
        self.pods = self.cluster.start_all_ready()
        self.jobs = [self.rank0.flux("submit", "-N2", "--exclusive", "sleep", "inf").strip() for _ in range(4)]
        wait_until(lambda: self.states() == ["R", "R", "S", "S"], "two jobs to run and two to wait", 20)

    @property
    def rank0(self) -> Pod:
        return self.cluster.pod(0)

    def states(self) -> list[str]:
        """Each job's state, as `flux jobs` abbreviates it (S: waiting, R: running, CA: cancelled, ...)."""
        listing = self.rank0.flux("jobs", "-a", "-n", "-o", "{id.f58} {status_abbrev}")
        states = dict(line.split() for line in listing.splitlines())
        return [states.get(job, "missing") for job in self.jobs]

    def exceptions(self) -> list[str]:
        """Each job's exception note ("" for none)."""
        notes = []
        for job in self.jobs:
            events = self.rank0.flux("job", "eventlog", "-f", "json", job)
            notes.append(lifecycle.HAND_OVER_NOTE if lifecycle.HAND_OVER_NOTE in events else "")
        return notes

    def replaced(self) -> Pod:
        """The replacement pod's instance, once it takes jobs again."""
        replacement = self.cluster.pod(0)
        wait_until(replacement.ready, "the replacement's broker to be up", 60)
        wait_until(lambda: self.states()[2:] == ["R", "R"], "the queued jobs to run", 30)
        return replacement


def test_the_old_rank0_gone_first_its_replacement_brings_the_history_back_and_runs_the_queued_jobs(
    minicluster: Make,
) -> None:
    busy = Busy(minicluster)
    old = busy.rank0
    assert old.terminate() == 143
    assert "stopping scheduling, so that no queued job starts on the nodes the cancel frees" in old.log
    busy.cluster.start(0)
    replacement = busy.replaced()
    assert busy.states() == ["CA", "CA", "R", "R"]  # the running two were cancelled by the hand-over, with its note
    assert busy.exceptions() == [lifecycle.HAND_OVER_NOTE, lifecycle.HAND_OVER_NOTE, "", ""]
    assert "restarting the instance saved in /var/lib/minicluster-state/dev" in replacement.log
    assert "scheduling started again: the previous rank 0 had stopped it" in replacement.log
    assert replacement.flux("queue", "status").strip() == "Job submission is enabled\nScheduling is started"


def test_a_replacement_started_while_the_old_broker_still_stops_waits_for_it_and_loses_nothing(
    minicluster: Make,
) -> None:
    busy = Busy(minicluster)
    old = busy.rank0
    old.signal(signal.SIGTERM)
    wait_until(lambda: "told to stop (SIGTERM)" in old.log, "the old rank 0 to begin its hand-over", 10)
    busy.cluster.start(0)  # beside the stopping pod: the saved instance is still held
    assert old.wait(timeout=30) == 143
    replacement = busy.replaced()
    assert busy.states() == ["CA", "CA", "R", "R"]
    assert "database is locked" not in replacement.log  # it never started a broker beside the old one
    assert not list(busy.cluster.claim("flux-state").glob("dev.failed-*"))


def test_a_queue_a_user_stopped_stays_stopped_across_a_replacement(minicluster: Make) -> None:
    busy = Busy(minicluster)
    busy.rank0.flux("queue", "stop", "--quiet", "--message=maintenance")
    assert busy.rank0.terminate() == 143
    assert "scheduling was stopped already (flux queue stop): it stays stopped" in busy.rank0.log
    replacement = busy.cluster.start(0)
    wait_until(replacement.ready, "the replacement's broker to be up", 60)
    # Flux saves a stopped queue with the instance, but not its reason.
    assert replacement.flux("queue", "status").splitlines()[-1] == "Scheduling is stopped"
    assert busy.states()[2:] == ["S", "S"]


def test_a_killed_rank0_comes_back_from_its_last_checkpoint_and_runs_what_waited(minicluster: Make) -> None:
    """No hand-over: the running jobs end at the restart (Flux cannot reattach to them), the waiting
    ones stay queued and run, and the history stays."""
    busy = Busy(minicluster)
    checkpointed(busy.rank0.flux)
    busy.rank0.kill()
    busy.rank0.wait()
    busy.cluster.start(0)
    replacement = busy.replaced()
    assert busy.states()[:2] != ["R", "R"]  # ended by the restart
    assert "waiting up to" not in replacement.log  # a killed broker holds nothing


def test_a_crashed_rank0_broker_starts_again_in_its_pod_and_runs_what_waited(minicluster: Make) -> None:
    """The pod runs on (the OOM killer took the broker, not the entrypoint): the broker starts again at
    once from its last checkpoint in the same pod, so no replacement pod waits out the Job's back-off."""
    busy = Busy(minicluster)
    checkpointed(busy.rank0.flux)
    rank0 = busy.rank0
    crashed = rank0.flux("getattr", "broker.pid").strip()
    assert rank0.exec("kill", "-KILL", crashed).returncode == 0
    wait_until(lambda: "restarting it from its last checkpoint" in rank0.log, "the broker to start again", 30)
    wait_until(rank0.ready, "the broker to be up again", 60)
    wait_until(lambda: busy.states()[2:] == ["R", "R"], "the queued jobs to run", 30)
    assert rank0.running() and busy.cluster.pod(0) is rank0  # the same pod throughout
    assert rank0.flux("getattr", "broker.pid").strip() != crashed
    assert "did not start" not in rank0.log  # a crash, not a state it cannot start from


def test_a_crashed_rank0_broker_leaves_no_task_of_its_jobs_running_when_it_starts_again(minicluster: Make) -> None:
    """Flux runs each job shell in a process group of its own: the crashed broker's tasks ran on, on the
    cores that the restarted instance gives to the jobs that waited."""
    busy = Busy(minicluster)
    checkpointed(busy.rank0.flux)
    rank0 = busy.rank0
    tasks = set(rank0.exec("pgrep", "-fx", "sleep inf").stdout.split())
    assert tasks  # one of the two running jobs has a node here
    assert rank0.exec("kill", "-KILL", rank0.flux("getattr", "broker.pid").strip()).returncode == 0
    wait_until(lambda: "restarting it from its last checkpoint" in rank0.log, "the broker to start again", 30)
    wait_until(rank0.ready, "the broker to be up again", 60)
    wait_until(lambda: busy.states()[2:] == ["R", "R"], "the queued jobs to run", 30)
    assert not tasks & set(rank0.exec("pgrep", "-fx", "sleep inf").stdout.split())
    assert "ended what the broker left running" in rank0.log


def test_a_replacement_gives_up_when_the_saved_instance_stays_held_and_touches_nothing(minicluster: Make) -> None:
    busy = Busy(minicluster)
    assert busy.rank0.terminate() == 143
    claim = busy.cluster.claim("flux-state")
    before = snapshot(claim / "dev")
    with (claim / "dev.lock").open("a") as lock:  # a broker this test stands for holds it
        fcntl.flock(lock, fcntl.LOCK_EX)
        replacement = busy.cluster.start(0, env={"MC_STATE_LOCK_WAIT": "1"})
        assert replacement.wait(timeout=30) == 1
    assert "another broker still holds /var/lib/minicluster-state/dev after 1s: not starting a second one" in (
        replacement.log
    )
    assert "restarting the instance" not in replacement.log
    assert snapshot(claim / "dev") == before
    assert not list(claim.glob("dev.failed-*"))


def test_one_failed_start_from_the_saved_state_does_not_throw_it_away(minicluster: Make) -> None:
    """The broker's own transient failure: its database is locked (by another process, here this test's
    sqlite connection) when it starts, and the next try finds it free."""
    busy = Busy(minicluster)
    assert busy.rank0.terminate() == 143
    database = sqlite3.connect(busy.cluster.claim("flux-state") / "dev" / "content.sqlite", timeout=0)
    database.execute("BEGIN EXCLUSIVE")
    try:
        replacement = busy.cluster.start(0)
        wait_until(lambda: "did not start (status 1, try 1/3)" in replacement.log, "the first start to fail", 30)
    finally:
        database.rollback()
        database.close()
    assert "database is locked" in replacement.log
    busy.replaced()
    assert busy.states() == ["CA", "CA", "R", "R"]
    assert not list(busy.cluster.claim("flux-state").glob("dev.failed-*"))


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(path.relative_to(directory)): path.read_bytes() for path in directory.rglob("*") if path.is_file()}


def test_a_replacement_killed_after_a_hand_over_comes_back_scheduling(minicluster: Make) -> None:
    """Found by the soak (tests/soak): Flux saves the queues' state only at a clean stop, so a rank 0
    killed after a hand-over restarts with the queues the hand-over stopped; its replacement must start
    them again, as the first one did."""
    busy = Busy(minicluster)
    assert busy.rank0.terminate() == 143
    busy.cluster.start(0)
    busy.replaced()
    checkpointed(busy.rank0.flux)
    busy.rank0.kill()
    busy.rank0.wait()
    replacement = busy.cluster.start(0)
    wait_until(replacement.ready, "the second replacement's broker to be up", 60)
    wait_until(lambda: replacement.flux("queue", "status").splitlines()[-1] == "Scheduling is started",
               "scheduling to start again", 30)  # fmt: skip
    assert replacement.flux("run", "-N1", "true", timeout=30) == ""


def test_a_queue_a_user_stopped_after_a_replacement_stays_stopped_across_the_next(minicluster: Make) -> None:
    busy = Busy(minicluster)
    assert busy.rank0.terminate() == 143
    busy.cluster.start(0)
    busy.replaced()  # the first hand-over's queues started again
    claim = busy.cluster.claim("flux-state")
    assert [note.read_text() for note in claim.rglob(lifecycle.STOPPED_QUEUES_FILE)] == ["\n"]  # the default queue
    busy.rank0.flux("queue", "stop", "--quiet", "--message=maintenance")
    assert busy.rank0.terminate() == 143
    assert "scheduling was stopped already (flux queue stop): it stays stopped" in busy.rank0.log
    assert not list(claim.rglob(lifecycle.STOPPED_QUEUES_FILE))  # nothing noted: the replacement starts no queue
    replacement = busy.cluster.start(0)
    wait_until(replacement.ready, "the replacement's broker to be up", 60)
    assert replacement.flux("queue", "status").splitlines()[-1] == "Scheduling is stopped"


def test_a_worker_that_joins_while_rank0_hands_over_rejoins_its_replacement(minicluster: Make) -> None:
    """Found by the soak: a worker replaced while rank 0 handed over joined after rank 0 had marked
    the workers, so it completed when rank 0 stopped, and the cluster stayed a rank short for good."""
    cluster = minicluster(command=None, stateVolume=STATE, **faults.config())
    faults.install(cluster.claim(faults.CLAIM))
    cluster.start_all_ready()
    cluster.pod(3).kill()
    cluster.pod(3).wait()
    faults.inject(cluster.claim(faults.CLAIM), "cancel", "slow:4")  # the hand-over's cancel takes a while
    old = cluster.pod(0)
    old.signal(signal.SIGTERM)
    wait_until(lambda: "cancelling the running jobs" in old.log, "the old rank 0 to be handing over", 20)
    late = cluster.start(3)
    wait_until(late.ready, "the replaced worker to join the stopping instance", 10)
    assert old.wait(timeout=30) == 143
    cluster.start(0)
    wait_until(lambda: all(cluster.pod(rank).ready() for rank in range(4)), "every rank in the new instance", 60)
    assert late.running()
    assert "rejoining when its replacement is up" in late.log


def test_a_worker_killed_as_rank0_hands_over_does_not_hold_the_hand_over_up(minicluster: Make) -> None:
    """Found by the soak: marking every worker waited on the dead one past its 5 s bound (flux exec
    passes SIGTERM on to its tasks and keeps waiting), until the grace period's SIGKILL ended rank 0
    with no clean stop."""
    cluster = minicluster(command=None, stateVolume=STATE)
    cluster.start_all_ready()
    cluster.pod(3).kill()
    cluster.pod(0).signal(signal.SIGTERM)
    assert cluster.pod(0).wait(timeout=30) == 143  # a hand-over held up by the dead worker never ends
    assert "could not mark every worker to rejoin" in cluster.pod(0).log  # its bound gave up on it


def test_a_killed_rank0_restarted_with_a_stopped_worker_drain_has_it_undrained_again(minicluster: Make) -> None:
    """Its last checkpoint can hold the drain that a stopped worker's replacement has undone since:
    the worker's broker, restarted once rank 0 is back, undoes it again. The checkpoint period leaves
    the worker's replacement time to undo the drain before rank 0 is killed, with no checkpoint between."""
    cluster = minicluster(command=None, stateVolume={**STATE, "checkpointPeriod": "10s"})
    cluster.start_all_ready()
    rank0 = cluster.pod(0)
    assert cluster.pod(3).terminate() == 143  # it drains rank 3 as it stops
    checkpointed(rank0.flux)  # with the drain
    worker = cluster.start(3)
    wait_until(lambda: "undrained this rank" in worker.log, "the replacement to undrain rank 3", 30)
    rank0.kill()  # before the next checkpoint
    rank0.wait()
    replacement = cluster.start(0)
    wait_until(replacement.ready, "the replacement's broker to be up", 60)
    wait_until(lambda: replacement.usable_ranks() == "0-3", "every rank available", 30)
    # Undone twice: the checkpoint rank 0 came back from held the drain, which is this test's case (a
    # checkpoint taken after the first undrain would have left nothing to undo). The line follows the
    # undrain that made the rank available.
    wait_until(lambda: worker.log.count("undrained this rank") == 2, "the worker to say it undid it again", 10)
