#!/usr/bin/env python3
"""From a job queued that needs more nodes than the cluster has to it running on new brokers, with
rank 0's autoscaler (autoscale.enabled): real Flux brokers in the Job's pods on this machine
(tests/kubelet), the autoscaler acting through the API stand-in over HTTPS as its service account,
the stand-in's Job controller starting the new pods (tests/autoscaled.py). A cluster of 1 broker
that may grow to `--nodes`, and one job of `--nodes` nodes; each run on a new cluster. Per run:
  - detect: the job's submission to the autoscaler's patch of the Job;
  - bring-up: that patch to the last new broker online (Flux's resource journal): the new pods'
    start and their brokers' joining, which Kubernetes and Flux take;
  - start: the last new broker online to the job running (Flux's scheduler);
  - overhead: detect + start, what the autoscaler adds to bring-up (the goal: at most 2 s).

    venv/bin/python -m tests.bench.autoscale                # 2 nodes, 3 runs
    venv/bin/python -m tests.bench.autoscale --nodes 4 --runs 5

Needs root (namespaces) and flux-core 0.88 installed (MC_FLUX_PREFIX, default /opt/flux: tests/kubelet/image.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from flux_minicluster.config import paths
from flux_minicluster.config.loader import load_spec
from tests.autoscaled import AUTOSCALE, Autoscaled
from tests.bench.spread import spread
from tests.conftest import config
from tests.kube_api import StandIn
from tests.kubelet.pods import Kubelet

MEASURES = ("detect", "bring-up", "start", "overhead")
ONLINE = """import sys
import flux
from flux.constants import FLUX_RPC_STREAMING
from flux.idset import IDset
wanted, seen = set(range(1, int(sys.argv[1]))), {}
journal = flux.Flux(sys.argv[2]).rpc("resource.journal", {}, flags=FLUX_RPC_STREAMING)
while not wanted <= set(seen):
    for event in journal.get()["events"]:
        if event["name"] == "online":
            for rank in IDset(event["context"]["idset"]):
                seen.setdefault(rank, event["timestamp"])
    journal.reset()
print(max(seen[rank] for rank in wanted))
"""


def one_run(nodes: int, directory: Path) -> dict[str, float]:
    raw = config(command=None, size=1, maxSize=nodes, autoscale=AUTOSCALE)
    spec = load_spec({f"minicluster:{key}": value for key, value in raw.items()}, "dev")
    stand_in = StandIn(directory)
    kubelet = Kubelet(directory / "cluster", spec)
    try:
        cluster = Autoscaled(kubelet, stand_in)
        job = cluster.submit(f"-N{nodes}", "true")
        cluster.wait(lambda: cluster.job_field(job, "status") == "COMPLETED", "the job to run", 60)
        submitted, ran = (float(cluster.job_field(job, field)) for field in ("t_submit", "t_run"))
        done = cluster.rank0.exec("flux", "python", "-c", ONLINE, str(nodes), paths.LOCAL_URI, timeout=10)
        assert done.returncode == 0, done.stderr
        online = float(done.stdout)
        patched = cluster.resized[0][0]
    finally:
        kubelet.close()
        stand_in.stop()
    detect, bring_up, start = patched - submitted, online - patched, ran - online
    return {"detect": detect, "bring-up": bring_up, "start": start, "overhead": detect + start}


def table(nodes: int, runs: int) -> str:
    results = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as directory:
            results.append(one_run(nodes, Path(directory)))
    lines = ["| what | nodes | runs | min (s) | median (s) | max (s) |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for measure in MEASURES:
        times = [result[measure] for result in results]
        lines.append(f"| {measure} | {nodes} | {runs} | {spread(times, 2)} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2, help="nodes the job needs, and maxSize (default 2)")
    parser.add_argument("--runs", type=int, default=3, help="runs (default 3)")
    args = parser.parse_args()
    print(table(args.nodes, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
