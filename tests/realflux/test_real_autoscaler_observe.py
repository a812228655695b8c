"""What rank 0's autoscaler sees of the instance (autoscaler.observe) on real Flux, in the Job's pods
on this machine: the ranks up, drained and busy, and for each job waiting for resources the nodes it
needs; held jobs and stopped queues wait for something else than nodes, and are left out."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from flux_minicluster.config import paths
from tests.kubelet.pod import Pod, wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
Make = Callable[..., Kubelet]
OBSERVE = """import json, sys
sys.path.insert(0, sys.argv[1])
import autoscaler, flux
seen = autoscaler.observe(flux.Flux(sys.argv[2]), int(sys.argv[3]))
found = seen._asdict()
print(json.dumps({key: sorted(value) if isinstance(value, frozenset) else value for key, value in found.items()}))
"""


def observe(rank0: Pod, size: int) -> dict[str, Any]:
    done = rank0.exec("flux", "python", "-c", OBSERVE, paths.RUN_CONFIG_DIR, paths.LOCAL_URI, str(size))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def rank0(minicluster: Make) -> Pod:
    """Rank 0 of a cluster of 2 brokers that may grow to 4."""
    pods = minicluster(command=None, size=2, maxSize=4).start_all_ready()
    return pods[0]


def running(rank0: Pod, *args: str) -> str:
    job = rank0.flux("submit", *args, "sleep", "inf").strip()
    wait_until(lambda: rank0.flux("jobs", "-no", "{status_abbrev}", job).strip() == "R", f"{job} to run", 10)
    return job


def waiting(rank0: Pod, count: int) -> None:
    def settled() -> bool:
        return len(rank0.flux("jobs", "--filter=sched", "-no", "{id}").split()) == count

    wait_until(settled, f"{count} jobs to wait for resources", 10)


def test_an_idle_instance_has_its_ranks_up_nothing_busy_and_nothing_waiting(rank0: Pod) -> None:
    assert observe(rank0, 2) == {"size": 2, "up": [0, 1], "drained": [], "busy": [], "waiting": []}


def test_waiting_jobs_need_the_nodes_they_ask_for_or_their_cores_in_whole_nodes(rank0: Pod) -> None:
    nodes, cores = map(int, rank0.flux("resource", "list", "-s", "all", "-no", "{nnodes} {ncores}").split())
    per_node = cores // nodes
    running(rank0, "-N2")
    rank0.flux("submit", "-N3", "true")
    rank0.flux("submit", f"-n{per_node + 1}", "true")  # one core more than a node has: two nodes
    waiting(rank0, 2)
    found = observe(rank0, 2)
    assert (found["busy"], sorted(found["waiting"])) == ([0, 1], [2, 3])


def test_held_jobs_and_jobs_in_a_stopped_queue_are_not_waiting_for_nodes(rank0: Pod) -> None:
    running(rank0, "-N2")
    rank0.flux("submit", "--urgency=hold", "-N1", "true")
    waiting(rank0, 1)
    assert observe(rank0, 2)["waiting"] == []
    rank0.flux("submit", "-N1", "true")
    waiting(rank0, 2)
    assert observe(rank0, 2)["waiting"] == [1]
    rank0.flux("queue", "stop", "--quiet")
    assert observe(rank0, 2)["waiting"] == []


def test_a_drained_rank_and_ranks_beyond_the_size(rank0: Pod) -> None:
    rank0.flux("resource", "drain", "1", "admin")
    found = observe(rank0, 2)
    assert (found["up"], found["drained"]) == ([0, 1], [1])  # ranks 2-3: not started, so not up
