#!/usr/bin/env python3
"""How long does the admission check take on a large cluster? Fixtures of N nodes and M pods (spread
over the nodes, one to three containers each, common requests), served as the API server pages them
(500 a page): the time to decode those pages and the time of the pure check itself.

    venv/bin/python -m tests.bench.admission                          # 5 000 nodes, 100 000 pods
    venv/bin/python -m tests.bench.admission --nodes 500 --pods 10000
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from dataclasses import dataclass
from typing import Any

from flux_minicluster.cluster import admission
from flux_minicluster.cluster.admission import fit
from flux_minicluster.config.loader import load_spec
from tests.bench import steps

CPU = ("100m", "250m", "500m", "1", "2")
MEMORY = ("128Mi", "256Mi", "1Gi", "2Gi")


def fixtures(nodes: int, pods: int, seed: int = 7) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    node_list = [
        {"metadata": {"name": f"node-{i}", "labels": {"pool": "hpc" if i % 2 else "web"}},
         "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]} if i % 10 == 0 else {},
         "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}]}}
        for i in range(nodes)
    ]  # fmt: skip
    pod_list = [
        {"metadata": {"name": f"p-{i}", "namespace": f"ns-{i % 50}", "labels": {}},
         "spec": {"nodeName": f"node-{rng.randrange(nodes)}",
                  "containers": [{"name": f"c{k}", "resources": {"requests": {"cpu": rng.choice(CPU),
                                                                              "memory": rng.choice(MEMORY)}}}
                                 for k in range(rng.randint(1, 3))]}}
        for i in range(pods)
    ]  # fmt: skip
    return node_list, pod_list


def pages(items: list[dict[str, Any]], kind: str) -> list[bytes]:
    return [json.dumps({"kind": kind, "items": items[i : i + admission.PAGE]}).encode()
            for i in range(0, len(items), admission.PAGE)]  # fmt: skip


@dataclass(frozen=True)
class Measurement:
    decode_s: float
    """Seconds to decode the API server's pages."""
    check_s: float
    """Seconds of the check itself."""
    check_steps: int
    """The lines of the project's code the check ran (tests/bench/steps.py): the same on any machine."""
    problems: list[str]


def measure(nodes: int, pods: int) -> Measurement:
    node_list, pod_list = fixtures(nodes, pods)
    raw = pages(node_list, "NodeList") + pages(pod_list, "PodList")
    started = time.perf_counter()
    decoded = [item for page in raw for item in json.loads(page)["items"]]
    decode_s = time.perf_counter() - started
    spec = load_spec({"minicluster:image": "flux:1", "minicluster:size": "1000", "minicluster:command": "hostname",
                      "minicluster:resources": json.dumps({"requests": {"cpu": "4", "memory": "16Gi"}}),
                      "minicluster:pod": json.dumps({"nodeSelector": {"pool": "hpc"}})}, "bench")  # fmt: skip
    pod = admission.broker_pod(spec)
    snapshot = fit.Snapshot(nodes=decoded[:nodes], pods=decoded[nodes:], quotas=[], admitted=pod)

    def check() -> list[str]:
        return fit.problems(admission.shape(spec, pod), snapshot)

    # The check's own work, as `pulumi up` runs it: with the garbage collector off (__main__.py). A full
    # collection landing in it walks the whole heap of whatever process runs it (a test worker's, after
    # hundreds of tests), which says nothing of the check: it made CI's ratio 34 where the check's is 10.
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        problems = check()
        check_s = time.perf_counter() - started
    finally:
        gc.enable()
    return Measurement(decode_s, check_s, steps.count(check), problems)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=100_000)
    args = parser.parse_args()
    measured = measure(args.nodes, args.pods)
    print("| nodes | pods | decode pages (ms) | check (ms) | check (steps) | fits |")
    print("| ---: | ---: | ---: | ---: | ---: | --- |")
    fits = "yes" if not measured.problems else "no"
    print(f"| {args.nodes} | {args.pods} | {measured.decode_s * 1000:.0f} | {measured.check_s * 1000:.0f} "
          f"| {measured.check_steps} | {fits} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
