#!/usr/bin/env python3
"""Bring-up on the real node (tests/engines/node.py: containerd, runc, the kubelet), against Flux's own
`flux start -s N` on the same machine: per size, render.py's objects of a MiniCluster of N brokers that
runs `flux submit --watch -N N -n N date +%s.%N` (its certificate made locally, as render.py makes it)
applied with `kubectl apply`, timed from that command's start to the first task's printed time and to
the Job's completion (`kubectl wait`), in alternating runs with `flux start -s N` running the same
command (tests/bench/bringup.py's floor). The MiniCluster's time holds what a cluster adds: the API
server, the scheduler, the Job controller, the kubelet starting each pod's sandbox and container.

    MC_CONTROL_PLANE=DIR MC_NODE=DIR venv/bin/python -m tests.bench.bringup_node --sizes 2,4,8 --runs 3

Needs a running control plane and real node (as `.ci/run` starts them), with flux-core in the node's
image and on this machine (MC_FLUX_PREFIX at both).
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubernetes import client, config

from tests.bench.bringup import COMMAND, Timing, first_stamp, floor
from tests.bench.rendered import apply, kubectl, rendered, stack_file
from tests.engines.control_plane import ControlPlane
from tests.harness import example

IMAGE = example("dev")["image"]


def on_node(plane: ControlPlane, admin: client.ApiClient, size: int) -> Timing:
    namespace = f"bench-{secrets.token_hex(4)}"
    core = client.CoreV1Api(admin)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    try:
        with tempfile.TemporaryDirectory() as directory:
            keys = {"image": IMAGE, "size": size, "tasks": size, "command": " ".join(COMMAND), "namespace": namespace}
            objects = rendered(stack_file(Path(directory), keys))
            started = time.time()
            apply(plane, objects, Path(directory))
            kubectl(plane, "wait", "-n", namespace, "--for=condition=complete", "--timeout=300s", "job/bench")
            ended = time.time()
        first: Any = core.list_namespaced_pod(namespace, label_selector="batch.kubernetes.io/job-completion-index=0")
        rank0 = first.items[0]
        log = core.read_namespaced_pod_log(str(rank0.metadata.name), namespace, container="flux-broker")
        return Timing(first_stamp(log, started), ended - started)
    finally:
        core.delete_namespace(namespace)


def table(plane: ControlPlane, admin: client.ApiClient, sizes: list[int], runs: int) -> str:
    lines = [
        "| brokers | runs | MiniCluster on the real node to command (s) | `flux start -s N` to command (s) | ratio "
        "| MiniCluster to Job complete (s) | `flux start -s N` to exit (s) | ratio |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size in sizes:
        pods, floors = [], []
        for _ in range(runs):
            pods.append(on_node(plane, admin, size))
            floors.append(floor(size))
        cells = [str(size), str(runs)]
        for field in ("to_command", "to_exit"):
            ours = statistics.median(getattr(timing, field) for timing in pods)
            theirs = statistics.median(getattr(timing, field) for timing in floors)
            cells += [f"{ours:.2f}", f"{theirs:.2f}", f"{ours / theirs:.2f}"]
        lines.append(f"| {' | '.join(cells)} |")
        print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2,4,8", help="comma-separated broker counts")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    plane = ControlPlane.attach(Path(os.environ["MC_CONTROL_PLANE"]))
    admin = config.new_client_from_config(str(plane.kubeconfig))  # type: ignore[no-untyped-call]
    print(table(plane, admin, [int(size) for size in args.sizes.split(",")], args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
