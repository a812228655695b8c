"""A worker with workers below it in Flux's tree (tbon.topo: kary:32 by default, so from 34 brokers on;
here kary:2, where rank 3's parent is rank 1). Flux shuts a broker's subtree down with it, and each
broker below exits 0, as at the instance's end: told to stop, such a worker takes them out of the
instance with it and marks them to rejoin its replacement (stopping.sh, leave_instance); one that
leaves on its own, having lost rank 0, leaves each of them to find rank 0 out of reach at its rc3
(worker_rc.sh). At the instance's end, rank 0 is there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.autoscaled import ranks as idset
from tests.kubelet.pod import Pod, wait_until
from tests.kubelet.pods import Kubelet
from tests.realflux.test_real_lifecycle import STOPPED, drained, eventlog, job_events

pytestmark = pytest.mark.realflux
Make = Callable[..., Kubelet]


def ranks(event: dict[str, Any]) -> set[int]:
    return idset(event["context"]["idset"])


MARKED = "went away: rejoining when its replacement is up"
"""What a worker's entrypoint logs as a broker that was marked to rejoin ends (worker.sh, start_worker)."""


def tree(minicluster: Make) -> tuple[Kubelet, list[Pod]]:
    cluster = minicluster(size=4, command=None, topology="kary:2")  # 0 -> 1, 2; 1 -> 3
    pods = cluster.start_all_ready()
    assert pods[0].flux("overlay", "parentof", "3").strip() == "1"
    return cluster, pods


def test_the_workers_below_a_worker_told_to_stop_rejoin_its_replacement_rather_than_complete(minicluster: Make) -> None:
    cluster, (rank0, interior, _, below) = tree(minicluster)
    assert interior.terminate() == STOPPED
    wait_until(lambda: MARKED in below.log, "the worker below to be told to rejoin", 20)
    assert below.running()  # not completed: the Job would never run index 3 again
    assert drained(rank0) == "1,3 minicluster: the pod of rank 1 is stopping"
    cluster.start(1)
    wait_until(lambda: rank0.usable_ranks() == "0-3", "both ranks back in the instance, undrained", 30, poll=0.5)


def test_the_jobs_below_a_worker_told_to_stop_end_before_their_brokers_leave(minicluster: Make) -> None:
    _, (rank0, interior, _, _) = tree(minicluster)
    job = rank0.flux("submit", "--requires=rank:3", "sleep", "300").strip()  # on the rank below alone
    wait_until(lambda: rank0.flux("jobs", "-no", "{state}", job).strip() == "RUN", "the job to run", 10)
    assert interior.terminate() == STOPPED
    wait_until(lambda: rank0.flux("jobs", "-no", "{state}", job).strip() == "INACTIVE", "the job to end", 30)
    ended = rank0.flux("jobs", "-no", "{result}|{exception.type}|{exception.note}", job).strip()
    assert ended == "FAILED|node-failure|minicluster: the pod of rank 1 is stopping"
    (freed,) = [stamp for name, stamp in job_events(rank0, job) if name == "free"]
    left = next(e["timestamp"] for e in eventlog(rank0, "resource") if e["name"] == "offline" and 3 in ranks(e))
    assert freed < left  # Flux waited for no shell on the rank below


def rank0_killed_and_replaced(minicluster: Make, *, watching_rank1: bool = True) -> list[Pod]:
    """Rank 1 loses rank 0 and leaves the instance, which takes rank 3 down: abruptly where rank 1's
    watch kills its broker first, orderly (rank 3 exits 0) where Flux's own way out comes first."""
    cluster = minicluster(size=4, command=None, topology="kary:2", stateVolume={"claimName": "flux-state"})
    pods = cluster.start_all_ready()
    if not watching_rank1:
        wait_until(lambda: pods[1].exec("pkill", "-f", "dmesg --follow").returncode == 0, "rank 1's watch", 30)
    pods[0].kill()
    pods[0].wait()
    rank0 = cluster.start(0)
    wait_until(rank0.ready, "the replacement to be ready", 30)
    wait_until(lambda: rank0.usable_ranks() == "0-3", "every rank back in the instance", 60, poll=0.5)
    return [rank0, *pods[1:]]


def test_the_workers_below_a_worker_that_lost_a_killed_rank0_rejoin_its_replacement(minicluster: Make) -> None:
    below = rank0_killed_and_replaced(minicluster)[3]
    assert below.running()
    assert "the instance shut down" not in below.log


def test_a_worker_shut_down_by_the_one_above_it_that_lost_rank0_finds_rank0_gone_and_rejoins(
    minicluster: Make,
) -> None:
    """Flux's own way out of rank 1 shuts rank 3 down, status 0, as at the instance's end: rank 3's rc3
    finds rank 0 out of reach, and marks it to rejoin."""
    below = rank0_killed_and_replaced(minicluster, watching_rank1=False)[3]
    assert below.running()
    assert MARKED in below.log


def test_the_workers_below_others_complete_at_the_instances_end(minicluster: Make) -> None:
    _, pods = tree(minicluster)
    pods[0].flux("shutdown", "--quiet")
    assert [pod.wait(timeout=60) for pod in pods] == [0, 0, 0, 0]
    assert not any(MARKED in pod.log for pod in pods)


def test_a_worker_with_a_worker_below_it_cut_off_and_turned_away_by_rank0_comes_back_with_it(
    minicluster: Make,
) -> None:
    """Rank 0 fails rank 1 (and rank 3 behind it) during the cut and turns it away once it is back. Rank 1
    leaving on its own waited for a goodbye from rank 3, whose link the cut had taken: it hung, Ready.
    The cut comes as soon as every pod is Ready, often before rank 1 has read its drain mark: with the
    watch behind that read, which rank 0 could not answer, it hung the same way, one run in three."""
    cluster, (rank0, interior, _, below) = tree(minicluster)
    with cluster.cut_off(1):
        wait_until(lambda: rank0.usable_ranks() == "0,2", "rank 0 to fail ranks 1 and 3", 60, poll=0.5)
    wait_until(lambda: rank0.usable_ranks() == "0-3", "both ranks back in the instance", 60, poll=0.5)
    assert "the broker lost its parent" in interior.log
    assert interior.running() and below.running()
