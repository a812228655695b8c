"""Rank 0's readings (readings.py, what `minicluster status` and the metrics read) on real Flux, in the
Job's pods on this machine (tests/kubelet), asked as `status` asks: `entrypoint.sh --readings`."""

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


def readings(rank0: Pod) -> dict[str, Any]:
    done = rank0.exec("/bin/bash", paths.ENTRYPOINT, "--readings", timeout=10)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def up(minicluster: Make, **overrides: Any) -> list[Pod]:
    cluster = minicluster(command=None, **overrides)
    pods = cluster.start_all_ready()
    return pods


def test_an_idle_instance_has_every_node_up_and_every_core_free(minicluster: Make) -> None:
    rank0 = up(minicluster, size=3)[0]
    found = readings(rank0)
    cores = int(rank0.flux("resource", "list", "-no", "{ncores}").strip())
    assert found["nodes"] == {"up": 3, "down": 0, "drained": 0, "spare": 0}
    assert found["cores"] == {"free": cores, "allocated": 0}
    assert found["jobs"]["all"] == dict.fromkeys(("pending", "running", "completed", "failed", "cancelled",
                                                  "timeout"), 0)  # fmt: skip
    assert found["queues"] == [{"name": "", "started": True, "enabled": True, "reason": ""}]
    assert 0 < found["uptime"] < 60


def test_jobs_nodes_and_queues_as_flux_counts_them(minicluster: Make) -> None:
    rank0, *_ = up(minicluster, size=3)
    rank0.flux("resource", "drain", "2", "bad disk")
    rank0.flux("run", "true")
    failed = rank0.exec("env", "FLUX_URI=local:///var/lib/minicluster/run/local", "flux", "run", "false")
    assert failed.returncode != 0
    cancelled = rank0.flux("submit", "sleep", "inf").strip()
    rank0.flux("cancel", cancelled)
    rank0.flux("submit", "-N1", "--exclusive", "sleep", "inf")
    rank0.flux("submit", "-N2", "--exclusive", "sleep", "inf")  # two nodes are not drained; one is busy
    rank0.flux("queue", "stop", "--quiet", "--message=maintenance")
    wait_until(lambda: readings(rank0)["jobs"]["all"]["running"] == 1, "the first sleep to run", 10)
    found = readings(rank0)
    assert found["nodes"] == {"up": 2, "down": 0, "drained": 1, "spare": 0}
    assert found["cores"]["allocated"] == int(rank0.flux("resource", "list", "-s", "allocated", "-no", "{ncores}"))
    assert found["jobs"]["all"] == {"pending": 1, "running": 1, "completed": 1, "failed": 1, "cancelled": 1,
                                    "timeout": 0}  # fmt: skip
    assert found["queues"] == [{"name": "", "started": False, "enabled": True, "reason": "maintenance"}]


def test_a_worker_that_died_is_down(minicluster: Make) -> None:
    pods = up(minicluster, size=3)
    pods[2].kill()
    wait_until(lambda: readings(pods[0])["nodes"]["down"] == 1, "rank 0 to see rank 2 go", 20)
    assert readings(pods[0])["nodes"] == {"up": 2, "down": 1, "drained": 0, "spare": 0}


def test_a_worker_told_to_stop_is_drained_not_down(minicluster: Make) -> None:
    """It drains its rank as it leaves, so that no job starts there while its broker stops."""
    pods = up(minicluster, size=3)
    assert pods[2].terminate() == 143
    wait_until(lambda: readings(pods[0])["nodes"]["up"] == 2, "rank 0 to see rank 2 go", 20)
    assert readings(pods[0])["nodes"] == {"up": 2, "down": 0, "drained": 1, "spare": 0}


def test_gpus_are_counted_free_and_allocated(minicluster: Make) -> None:
    rank0, _ = up(minicluster, size=2, gpus=2)
    rank0.flux("submit", "-n1", "-g1", "sleep", "inf")  # one core and one GPU (-N would take the whole node)
    wait_until(lambda: readings(rank0)["gpus"]["allocated"] == 1, "the job to hold a GPU", 10)
    assert readings(rank0)["gpus"] == {"free": 3, "allocated": 1}


def test_ranks_beyond_the_current_size_are_spare_not_down(minicluster: Make) -> None:
    """An elastic cluster's hostlist runs to maxSize: the ranks not started yet are room to grow."""
    rank0 = up(minicluster, size=2, maxSize=4)[0]
    assert readings(rank0)["nodes"] == {"up": 2, "down": 0, "drained": 0, "spare": 2}
