"""resize.sh on real Flux, as `pulumi up` runs it in rank 0's container before it changes the scale
ConfigMap and the Job (cluster/scale.py), and the pods that go or come afterwards (tests/kubelet)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flux_minicluster.config import lifecycle, paths
from tests.kubelet import faults
from tests.kubelet.pod import Pod, wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
Make = Callable[..., Kubelet]
SHRINK_REASON = "minicluster: shrinking to 2 brokers"


def elastic(minicluster: Make, **overrides: Any) -> tuple[Kubelet, Pod]:
    """A persistent MiniCluster of 4 brokers, which may grow to 6."""
    cluster = minicluster(command=None, maxSize=6, **overrides)
    if "fluxPath" in overrides:
        faults.install(cluster.claim(faults.CLAIM))
    pods = cluster.start_all_ready()
    return cluster, pods[0]


def resize(rank0: Pod, size_from: int, size_to: int, policy: str = "wait", timeout: int = 20) -> tuple[int, str]:
    done = rank0.exec("bash", paths.RESIZE, str(size_from), str(size_to), policy, str(timeout), timeout=timeout + 20)
    return done.returncode, done.stderr


def drained(rank0: Pod) -> dict[str, str]:
    listing = rank0.flux("resource", "drain", "-n", "-o", "{ranks} {reason}")
    return dict(line.split(" ", 1) for line in listing.splitlines())


def job_on(rank0: Pod, rank: int, seconds: str = "inf") -> str:
    return rank0.flux("submit", f"--requires=rank:{rank}", "sleep", seconds).strip()


def state(rank0: Pod, job: str) -> str:
    return rank0.flux("jobs", "-n", "-o", "{status_abbrev}", job).strip()


def test_a_shrink_drains_the_ranks_that_go_and_its_lines_reach_rank0s_log(minicluster: Make) -> None:
    _, rank0 = elastic(minicluster)
    status, said = resize(rank0, 4, 2)
    assert status == 0
    assert drained(rank0) == {"2-3": SHRINK_REASON}
    assert "shrinking from 4 to 2 brokers: draining ranks 2-3, so that no new work starts there" in said
    assert "no job runs on ranks 2-3" in said
    assert said.strip().splitlines()[-1] in rank0.log  # through MC_LOG_SINK: the container's own stderr


def test_the_pods_that_go_leave_the_instance_and_a_grow_brings_them_back_undrained(minicluster: Make) -> None:
    cluster, rank0 = elastic(minicluster)
    assert resize(rank0, 4, 2)[0] == 0
    cluster.scale(2)
    wait_until(lambda: rank0.flux("resource", "status", "-s", "offline", "-no", "{ranks}").strip() == "2-5",
               "ranks 2-3 to go offline", 20)  # fmt: skip
    status, said = resize(rank0, 2, 4)
    assert status == 0
    assert "growing from 2 to 4 brokers: undraining ranks 2-3, drained when the cluster shrank" in said
    cluster.scale(4)
    wait_until(lambda: all(cluster.pod(index).ready() for index in range(4)), "the new brokers to be ready", 30)
    assert drained(rank0) == {}
    assert sorted(rank0.flux("run", "-N4", "hostname").split()) == ["dev-0", "dev-1", "dev-2", "dev-3"]
    assert "rank 3 of 4 in dev-[0-5]" in cluster.pod(3).log  # the new pod read the new size


def test_with_policy_wait_a_shrink_waits_for_the_job_on_a_rank_that_goes(minicluster: Make) -> None:
    _, rank0 = elastic(minicluster)
    job = job_on(rank0, 3, seconds="3")
    wait_until(lambda: state(rank0, job) == "R", "the job to run", 10)
    status, said = resize(rank0, 4, 2)
    assert status == 0
    assert f"waiting up to 20s for the jobs running on ranks 2-3 to finish (shrinkPolicy wait): {job}" in said
    assert "the jobs on ranks 2-3 have ended: the shrink goes ahead" in said
    assert state(rank0, job) == "CD"  # it completed, nobody cancelled it


def test_with_policy_wait_a_shrink_is_called_off_when_the_job_outlasts_the_timeout(minicluster: Make) -> None:
    _, rank0 = elastic(minicluster)
    rank0.flux("resource", "drain", "2", "bad memory")  # an admin's drain, before the shrink
    job = job_on(rank0, 3)
    wait_until(lambda: state(rank0, job) == "R", "the job to run", 10)
    status, said = resize(rank0, 4, 2, timeout=2)
    assert status == lifecycle.CALLED_OFF
    assert f"the shrink to 2 brokers is called off: after 2s these jobs still run on ranks 2-3: {job}" in said
    assert drained(rank0) == {"2": "bad memory"}  # what it drained is undrained; the admin's drain stays
    assert state(rank0, job) == "R"


def test_with_policy_cancel_a_shrink_cancels_the_job_on_a_rank_that_goes(minicluster: Make) -> None:
    _, rank0 = elastic(minicluster)
    staying, going = job_on(rank0, 1), job_on(rank0, 3)
    wait_until(lambda: state(rank0, going) == "R", "the job to run", 10)
    status, said = resize(rank0, 4, 2, policy="cancel")
    assert status == 0
    assert f"cancelling the jobs running on ranks 2-3 (shrinkPolicy cancel): {going}" in said
    wait_until(lambda: state(rank0, going) == "CA", "the job to be cancelled", 10)
    assert state(rank0, staying) == "R"


def test_a_grow_onto_ranks_never_drained_undrains_nothing(minicluster: Make) -> None:
    _, rank0 = elastic(minicluster)
    rank0.flux("resource", "drain", "1", "bad disk")
    status, said = resize(rank0, 4, 6)
    assert status == 0
    assert said.strip().splitlines() == ["minicluster[rank 0]: growing from 4 to 6 brokers"]
    assert drained(rank0) == {"1": "bad disk"}


def test_a_grow_undrains_the_ranks_that_come_back_and_leaves_an_admins_drain_elsewhere(minicluster: Make) -> None:
    _, rank0 = elastic(minicluster)
    assert resize(rank0, 4, 2)[0] == 0
    rank0.flux("resource", "drain", "1", "bad disk")
    assert resize(rank0, 2, 4)[0] == 0
    assert drained(rank0) == {"1": "bad disk"}


# -- when a flux call fails (faulty_flux.sh: real Flux, one call made to fail) ------------------------


def test_a_failing_drain_stops_the_resize_with_flux_s_own_message(minicluster: Make) -> None:
    cluster, rank0 = elastic(minicluster, **faults.config())
    faults.inject(cluster.claim(faults.CLAIM), "resource drain", "1")
    status, said = resize(rank0, 4, 2)
    assert status == 1
    assert "flux-resource: injected fault" in said
    assert "error: cannot drain ranks 2-3" in said
    assert drained(rank0) == {}


def test_a_job_listing_that_fails_mid_shrink_undrains_what_it_drained_and_stops(minicluster: Make) -> None:
    cluster, rank0 = elastic(minicluster, **faults.config())
    job = job_on(rank0, 3)
    wait_until(lambda: state(rank0, job) == "R", "the job to run", 10)
    faults.inject(cluster.claim(faults.CLAIM), "jobs", "0", "1")  # the first listing works, the next fails
    status, said = resize(rank0, 4, 2)
    assert status == 1
    assert f"waiting up to 20s for the jobs running on ranks 2-3 to finish (shrinkPolicy wait): {job}" in said
    assert "error: cannot list the running jobs" in said
    assert drained(rank0) == {}
    assert state(rank0, job) == "R"


def test_cancelled_jobs_that_do_not_end_call_the_shrink_off(minicluster: Make) -> None:
    cluster, rank0 = elastic(minicluster, **faults.config())
    job = job_on(rank0, 3)
    wait_until(lambda: state(rank0, job) == "R", "the job to run", 10)
    faults.inject(cluster.claim(faults.CLAIM), "cancel", "ignored")  # Flux took the cancel and never acted
    status, said = resize(rank0, 4, 2, policy="cancel", timeout=2)
    assert status == lifecycle.CALLED_OFF
    assert f"the shrink to 2 brokers is called off: after 2s these jobs still run on ranks 2-3: {job}" in said
    assert drained(rank0) == {}
