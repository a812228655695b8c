"""The metrics every broker pod serves (metrics.enabled: the pods' metrics.py, with Flux's Python) on
real Flux, in the Job's pods on this machine (tests/kubelet), read as Prometheus reads them
(prometheus_client's parser of the text format)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from flux_minicluster.builders import files
from tests.flux_instance import Instance
from tests.kubelet.image import FLUX
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
    pods = cluster.start_all_ready()
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


# A scrape's reading, in Flux's own Python against Flux's own instance, with every RPC it sends recorded
# where the bindings make them (flux.rpc.RPC: handle.rpc and the resource module's requests alike).
RECORDED_SCRAPE = """import json, sys
import flux.rpc
sent = []
sending = flux.rpc.RPC.__init__
def recorded(self, handle, topic, *args, **kwargs):
    sent.append(topic)
    sending(self, handle, topic, *args, **kwargs)
flux.rpc.RPC.__init__ = recorded
sys.path.insert(0, sys.argv[1])
import metrics
samples = metrics.Source().read()
pending = [value for name, labels, value in samples
           if name == "flux_jobs" and labels == {"state": "pending", "queue": "all"}]
print(json.dumps({"sent": sent, "pending": pending}))
"""


def recorded_scrape(instance: Instance, scale: Path) -> dict[str, Any]:
    """What rank 0's scrape of `instance` sends Flux (each RPC's topic, in order) and reads of its
    pending jobs."""
    env = {"MC_RANK": "0", "MC_METRICS_CACHE": "0", "MC_LOCAL_URI": instance.uri, "MC_SCALE_DIR": str(scale),
           "MC_MIN_SIZE": "1", "MC_MAX_SIZE": "2"}  # fmt: skip
    done = subprocess.run(
        [str(FLUX), "python", "-c", RECORDED_SCRAPE, str(files.POD_SCRIPTS)], env=instance.env(env),
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_scrape_asks_flux_the_same_with_1000_jobs_as_with_10_and_never_for_a_list_of_jobs(
    real_flux: None, tmp_path: Path
) -> None:
    """Rank 0's scrape reads counters the broker keeps (job-list's job-stats, resource and queue status),
    so its cost does not grow with the jobs: tests/bench/metrics.py times it."""
    (tmp_path / "size").write_text("2")
    instance = Instance(2)
    try:
        seen = {}
        for jobs, more in ((10, 10), (1000, 990)):
            submitted = instance.run(str(FLUX), "submit", "--urgency=hold", f"--cc=1-{more}", "--quiet", "true",
                                 timeout=300)  # fmt: skip
            assert submitted.returncode == 0, submitted.stderr
            seen[jobs] = recorded_scrape(instance, tmp_path)
    finally:
        instance.close()
    assert [seen[jobs]["pending"] for jobs in (10, 1000)] == [[10], [1000]]
    assert seen[10]["sent"] == seen[1000]["sent"]
    assert "job-list.job-stats" in seen[10]["sent"]
    assert not [topic for topic in seen[10]["sent"] if topic.startswith("job-list.") and topic != "job-list.job-stats"]
