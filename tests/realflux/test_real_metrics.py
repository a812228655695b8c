"""The metrics every broker pod serves (metrics.enabled: the pods' metrics.py, with Flux's Python) on
real Flux, in the Job's pods on this machine (tests/kubelet), read as Prometheus reads them
(prometheus_client's parser of the text format)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.kubelet.pod import Pod, wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
Make = Callable[..., Kubelet]
PORT = 9410
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(pod: Pod) -> Samples:
    """GET /metrics from inside the pod's network, parsed as Prometheus parses it."""
    fetch = f"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{PORT}/metrics').read().decode())"
    done = pod.exec("python3", "-c", fetch, timeout=10)
    assert done.returncode == 0, done.stderr
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(done.stdout)
        for sample in family.samples
    }


def serving(pod: Pod) -> bool:
    return (
        pod.exec("python3", "-c", f"import socket; socket.create_connection(('127.0.0.1', {PORT}), 1)").returncode == 0
    )


def up(minicluster: Make, **overrides: Any) -> list[Pod]:
    cluster = minicluster(command=None, metrics={"enabled": True}, **overrides)
    pods = cluster.start_all()
    wait_until(lambda: all(pod.ready() for pod in pods), "every broker to be ready", 30)
    wait_until(lambda: all(serving(pod) for pod in pods), "every pod to serve its metrics", 10)
    return pods


def test_rank0_serves_the_instances_view_and_the_clusters_size(minicluster: Make) -> None:
    rank0, _, _ = up(minicluster, size=3, maxSize=5, minSize=2)
    rank0.flux("submit", "-N1", "--exclusive", "sleep", "inf")
    rank0.flux("queue", "stop", "--quiet")
    rank0.flux("submit", "sleep", "inf")
    wait_until(lambda: scrape(rank0)[("flux_jobs", (("queue", "all"), ("state", "pending")))] == 1, "the counts", 10)
    found = scrape(rank0)
    assert found[("minicluster_broker_up", (("rank", "0"),))] == 1
    assert {state: found[("flux_nodes", (("state", state),))] for state in ("up", "down", "drained", "spare")} == {
        "up": 3, "down": 0, "drained": 0, "spare": 2,
    }  # fmt: skip  # ranks 3-4: beyond the size, up to maxSize
    assert found[("flux_jobs", (("queue", "all"), ("state", "running")))] == 1
    assert found[("flux_queue_started", (("queue", ""),))] == 0
    assert found[("minicluster_size", ())] == 3
    assert (found[("minicluster_min_size", ())], found[("minicluster_max_size", ())]) == (2, 5)
    assert found[("flux_uptime_seconds", ())] > 0


def test_a_worker_serves_only_its_own_brokers_state_so_nothing_is_counted_twice(minicluster: Make) -> None:
    _, worker = up(minicluster, size=2)
    assert scrape(worker) == {("minicluster_broker_up", (("rank", "1"),)): 1}


def test_a_worker_whose_broker_is_not_up_says_so(minicluster: Make) -> None:
    cluster = minicluster(size=2, command=None, metrics={"enabled": True})
    worker = cluster.start(1)  # no rank 0 yet: its broker cannot join
    wait_until(lambda: serving(worker), "the worker to serve its metrics", 10)
    assert scrape(worker) == {("minicluster_broker_up", (("rank", "1"),)): 0}
