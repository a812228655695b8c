"""A worker that hears nothing from rank 0 for lifecycle.PARENT_SILENCE (broker.toml's [heartbeat]
timeout) drops its parent, and its entrypoint starts the broker again, which joins rank 0 once rank 0
answers; on real Flux. A replaced rank 0 that ignores a worker's connection (one of that worker's old
connections still open there) looks the same to the worker: it hears nothing. Rank 0's broker is
stopped (SIGSTOP) to make that silence here: its kernel still accepts and acknowledges, so neither TCP
nor anything else but the heartbeat timeout ends it. The soak (tests/soak) found the case: with Flux's
own 5 minutes the worker stayed offline and every job that needed all the nodes waited.

A rank 0 killed and replaced at once, the usual case, is told apart sooner: each worker's connection
closes with the old broker and comes back to the new one, which turns the worker away as soon as it hears
from it. Each worker speaks at once (worker.sh, watch_parent_link) rather than at Flux's next keepalive."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from flux_minicluster.config import lifecycle, paths
from tests.kubelet.pod import Pod, wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
SILENCE = float(lifecycle.PARENT_SILENCE.removesuffix("s"))
DISCONNECTED = "disconnecting: no heartbeat for"
"""What a worker's broker logs (Flux's overlay, at LOG_CRIT) as the heartbeat timeout ends its link."""
SPEAKING = "the link to the parent broker is back: pinging rank 0 through it"
"""What a worker's entrypoint logs as its link to rank 0 comes back after it closed."""
REJOINING = "after it had joined the instance: rejoining rank 0's replacement"
"""What the entrypoint logs as it starts a broker again that had joined (worker.sh, start_worker)."""
REJOINING_MARKED = "went away: rejoining when its replacement is up"
"""What the entrypoint logs as a broker that rank 0 marked to rejoin ends (worker.sh, start_worker)."""
REJOIN_MARK = f"{paths.STATE_DIR}/rejoin"
"""Where a rank 0 that goes away marks each worker to rejoin its replacement (entrypoint.sh's rejoin_mark)."""


def test_a_worker_whose_rank0_falls_silent_starts_its_broker_again_and_rejoins_once_rank0_answers(
    minicluster: Callable[..., Kubelet],
) -> None:
    cluster = minicluster(command=None)
    pods = cluster.start_all_ready()
    rank0, workers = pods[0], pods[1:]
    assert rank0.exec("pkill", "-STOP", "-x", "flux-broker-0").returncode == 0  # the broker names itself by rank
    try:
        wait_until(
            lambda: all(REJOINING in worker.log for worker in workers),
            "each worker to start its broker again",
            SILENCE + 30,
            poll=0.5,
        )
    finally:
        rank0.exec("pkill", "-CONT", "-x", "flux-broker-0")
    assert all(DISCONNECTED in worker.log for worker in workers)
    wait_until(lambda: rank0.usable_ranks() == "0-3", "every rank online and available again", 60, poll=0.5)


def watching(worker: Pod) -> bool:
    """The worker's watch reads its broker's log. What the worker asked rank 0 on its way in (its undrain
    step, just before the watch) then has its answer: a word of its still in flight would tell the
    replacement as well (it did, killed as soon as the brokers were ready)."""
    return worker.exec("pgrep", "-f", "dmesg --follow").returncode == 0


def test_workers_rejoin_a_killed_rank0s_replacement_once_they_hear_from_it_not_at_a_keepalive(
    minicluster: Callable[..., Kubelet],
) -> None:
    # Flux's keepalive, which would tell the replacement too, out of the test's time: only the workers'
    # own word can.
    quiet = {"tbon.torpid_min": "25s"}
    cluster = minicluster(command=None, stateVolume={"claimName": "flux-state"}, brokerAttributes=quiet)
    pods = cluster.start_all_ready()
    wait_until(lambda: all(watching(pod) for pod in pods[1:]), "each worker's watch of its link", 30)
    pods[0].kill()
    pods[0].wait()
    rank0, workers = cluster.start(0), pods[1:]
    wait_until(lambda: all(REJOINING in worker.log for worker in workers), "each worker to rejoin", 20, poll=0.2)
    assert all(SPEAKING in worker.log for worker in workers)
    wait_until(lambda: rank0.usable_ranks() == "0-3", "every rank online and available again", 30, poll=0.5)


def test_a_mark_to_rejoin_from_a_rank0_killed_in_its_hand_over_is_not_taken_for_the_instances_end(
    minicluster: Callable[..., Kubelet],
) -> None:
    """Rank 0's hand-over first marks every worker to rejoin its replacement (stopping.sh, hand_over_rank0);
    killed right after, it never stops the workers, whose brokers lose it instead. The mark was for those
    brokers: once the replacement's instance shuts down for good, each worker completes, as the Job needs,
    rather than waiting for yet another rank 0."""
    cluster = minicluster(command=None, stateVolume={"claimName": "flux-state"})
    pods = cluster.start_all_ready()
    pods[0].flux("exec", "-r", "all", "touch", REJOIN_MARK)  # what the hand-over does first
    pods[0].kill()
    pods[0].wait()
    rank0, workers = cluster.start(0), pods[1:]
    wait_until(lambda: all(REJOINING in worker.log for worker in workers), "each worker to rejoin", 30, poll=0.2)
    wait_until(lambda: rank0.usable_ranks() == "0-3", "every rank online and available again", 30, poll=0.5)
    rank0.flux("shutdown", "--quiet", timeout=60)
    assert rank0.wait(timeout=60) == 0
    wait_until(lambda: not any(worker.running() for worker in workers), "each worker to complete", 60, poll=0.5)
    assert [worker.wait() for worker in workers] == [0, 0, 0]
    assert not any(REJOINING_MARKED in worker.log for worker in workers)


def test_a_worker_turned_away_by_rank0s_replacement_leaves_no_process_of_its_old_broker_behind(
    minicluster: Callable[..., Kubelet],
) -> None:
    """Flux runs each job shell and rc script in a process group of its own, and they outlive a killed
    broker. The watch ends the worker's broker as its parent turns it away, and everything under it: an
    rc3 left running removed modules from the next broker, whose socket has the same path (found by the
    soak), and a job shell left running keeps its tasks on a node that Flux gives to other jobs."""
    cluster = minicluster(command=None, stateVolume={"claimName": "flux-state"})
    pods = cluster.start_all_ready()
    wait_until(lambda: watching(pods[1]), "the worker's watch of its link", 30)
    job = pods[0].flux("submit", "--requires=rank:1", "sleep", "300").strip()
    wait_until(lambda: pods[1].exec("pgrep", "-fx", "sleep 300").returncode == 0, f"job {job}'s task on rank 1", 30)
    pods[0].kill()
    pods[0].wait()
    rank0, worker = cluster.start(0), pods[1]
    wait_until(lambda: REJOINING in worker.log, "the worker to be turned away and rejoin", 30, poll=0.2)
    assert "the broker lost its parent" in worker.log  # the watch ended it, not Flux
    left = ("pgrep", "-f", "flux-shell|^sleep 300")  # the shell and its task, SIGKILLed: gone once reaped
    wait_until(lambda: worker.exec(*left).returncode == 1, "the old broker's job shell and task to be gone", 10)
    wait_until(lambda: rank0.usable_ranks() == "0-3", "every rank online and available again", 30, poll=0.5)


def test_a_worker_whose_broker_dies_on_its_own_ends_what_it_left_running_before_it_rejoins(
    minicluster: Callable[..., Kubelet],
) -> None:
    """An OOM kill or a crash ends the broker alone. Flux then fails the job that ran there and gives the
    rank to the next job, while the job's task, in a process group of its own, ran on for good."""
    cluster = minicluster(command=None)
    pods = cluster.start_all_ready()
    pods[0].flux("submit", "--requires=rank:1", "sleep", "300")
    wait_until(lambda: pods[1].exec("pgrep", "-fx", "sleep 300").returncode == 0, "the job's task on rank 1", 30)
    broker = pods[1].exec("cat", f"{paths.STATE_DIR}/broker.pid").stdout.strip()
    assert pods[1].exec("kill", "-KILL", broker).returncode == 0
    wait_until(lambda: pods[1].exec("pgrep", "-fx", "sleep 300").returncode == 1, "the job's task to be gone", 30)
    assert "ended what the broker left running" in pods[1].log
    wait_until(lambda: pods[0].usable_ranks() == "0-3", "rank 1 online and available again", 30, poll=0.5)
    assert pods[0].flux("run", "--requires=rank:1", "hostname").strip() == cluster.hostname(1)
