#!/usr/bin/env python3
"""Where a persistent MiniCluster's recovery time goes when rank 0's pod is evicted, on the real control
plane (its real Job controller makes the replacement) and the real node (real containers), with real
Flux: a MiniCluster of 2 brokers with a state volume (a hostPath in a folder of this run's, pinned to
the node), one job holding every node and two queued behind it; then rank 0's pod is evicted through
the Eviction API (with --how delete, deleted; with --how crash, its broker SIGKILLed, a crash). Each
step is timed from then by what a watch on the pods saw (the API's own times have whole seconds): the
old pod terminating, its broker container ended, the pod Failed, the replacement created, scheduled,
its broker container running, Ready; and the first queued job's own start (it prints its time). With
--rank 1 the worker's pod is the one lost, and the last step is its rank online again in rank 0's
view. A broker that crashes restarts in its container (a worker's at once, rank 0's if it crashed within
60 s of its start, MC_RESTORE_GRACE): then no pod is replaced, and the pod's steps are not seen.
Printed as a table of medians over the runs.

With --keeper the MiniCluster runs its keeper (keeper.enabled), which replaces the lost pod itself: rank
0 while it still stops, a worker once it has Failed. Then the benchmark looks, past the Job controller's
back-off, at what that controller made of it: the pods of the index that still run.

    MC_CONTROL_PLANE=DIR MC_NODE=DIR venv/bin/python -m tests.bench.rank0_eviction --runs 3
    MC_CONTROL_PLANE=DIR MC_NODE=DIR venv/bin/python -m tests.bench.rank0_eviction --how crash --rank 1
    MC_CONTROL_PLANE=DIR MC_NODE=DIR venv/bin/python -m tests.bench.rank0_eviction --keeper --faults 3

Needs a running control plane and real node (as `.ci/run` starts them) with flux-core in the node's
image (MC_FLUX_PREFIX when the node started).
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

import yaml
from kubernetes import client, config

from flux_minicluster.builders.names import REPLACES
from tests.bench.rendered import apply, rendered, stack_file
from tests.engines.control_plane import ControlPlane
from tests.engines.node import NODE_STATE
from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.lost_pods import (
    STEPS,
    PodWatch,
    both_online,
    flux,
    live_rank_pods,
    lose,
    queued_job_start,
    rank_pod,
    ready_rank,
)


def deploy(
    plane: ControlPlane, core: client.CoreV1Api, node: str, folder: Path, namespace: str, policy: str, how: str,
    size: int = 2, keeper: bool = False,
) -> str:  # fmt: skip
    """A persistent MiniCluster of `size` on the real node, with a state volume (a hostPath in `folder`),
    rank 0 Ready and every rank online: rank 0's pod name."""
    keys = {**example("interactive"), "size": size, "namespace": namespace, "keygen": "local",
            "stateVolume": {"hostPath": str(folder / namespace), "checkpointPeriod": "1s"},
            "pod": {"nodeSelector": {"kubernetes.io/hostname": node}}, "keeper": {"enabled": keeper},
            # A deletion or a crash is a failure that counts (docs/lost-pods.md): a Job that survives some.
            **({"backoffLimit": 10} if how != "evict" else {})}  # fmt: skip
    objects = [obj for obj in yaml.safe_load_all(rendered(stack_file(folder, keys))) if obj]
    for obj in objects:
        if obj["kind"] == "Job" and policy:  # another replacement policy, to compare
            obj["spec"]["podReplacementPolicy"] = policy
            if policy != "Failed":  # the API server allows only Failed with a podFailurePolicy
                obj["spec"].pop("podFailurePolicy", None)
                obj["spec"]["backoffLimit"] = 10  # so the disruptions, counted now, do not fail the Job
    apply(plane, yaml.safe_dump_all(objects), folder)
    rank0: str = wait_until(lambda: ready_rank(core, namespace), "ready rank 0", 120, poll=0.1).metadata.name
    wait_until(lambda: both_online(core, namespace, rank0, size), "every rank online", 120, poll=0.1)
    return rank0


def index_pods(core: client.CoreV1Api, namespace: str, rank: int) -> list[str]:
    """The pods of the index that are neither ended nor terminating, each with who made it."""
    return sorted(
        f"{p.metadata.name} ({'the keeper' if REPLACES in (p.metadata.annotations or {}) else 'the Job controller'})"
        for p in live_rank_pods(core, namespace, rank)
    )


def one_fault(
    core: client.CoreV1Api, namespace: str, how: str, rank: int, kept: bool = False, earlier: int = 0
) -> dict[str, float]:
    """Rank 0's job queue held by a job on every node with two behind it, then the rank's pod lost:
    each step's time after the fault. `earlier`: the pods this Job lost before (its back-off doubles)."""
    rank0 = wait_until(lambda: ready_rank(core, namespace), "ready rank 0", 900, poll=0.1).metadata.name
    wait_until(lambda: both_online(core, namespace, rank0), "both ranks online", 900, poll=0.1)
    flux(core, namespace, rank0, "submit", "-N2", "sleep", "inf")
    queued = [flux(core, namespace, rank0, "submit", "-N1", "date", "+%s.%N").strip() for _ in range(2)]
    time.sleep(2)  # a checkpoint (checkpointPeriod 1s) holds the queue
    lost = rank0 if rank == 0 else rank_pod(core, namespace, rank).metadata.name
    watcher = PodWatch(core, namespace, lost, rank)
    fault = time.time()
    lose(core, namespace, lost, how)
    if rank == 0:  # the first queued job's own start, in the instance wherever it came back
        watcher.seen["the first queued job started"] = wait_until(
            lambda: queued_job_start(core, namespace, queued[0]), "the first queued job", 900, poll=0.1
        )
    else:  # rank 0 ran on: the lost rank is back once rank 0 counts it online again
        wait_until(lambda: not both_online(core, namespace, rank0), "the rank offline", 60, poll=0.05)
        wait_until(lambda: both_online(core, namespace, rank0), "the rank online again", 900, poll=0.05)
        watcher.mark("the rank online again")
        flux(core, namespace, rank0, "cancel", "--all")  # the job that held both nodes, for the next fault
    watcher.stopping.set()
    if kept:  # past the Job controller's back-off (10 s from the failure, doubled): what it made of ours
        look = 10 * 2**earlier + 5
        time.sleep(max(0.0, fault + look - time.time()))
        status: Any = client.BatchV1Api(core.api_client).list_namespaced_job(namespace).items[0].status
        print(f"{look} s after the fault, the pods of index {rank}: {index_pods(core, namespace, rank)}; the Job's"
              f" active {status.active}, ready {status.ready}, failed {status.failed}", flush=True)  # fmt: skip
    return {step: watcher.seen[step] - fault for step in STEPS if step in watcher.seen}


def faults_in_a_row(
    plane: ControlPlane, core: client.CoreV1Api, node: str, folder: Path, args: argparse.Namespace
) -> list[dict[str, float]]:
    """One MiniCluster, `args.faults` faults one after the other, each once the cluster is whole again."""
    namespace = f"bench-{secrets.token_hex(4)}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    try:
        deploy(plane, core, node, folder, namespace, args.replacement_policy, args.how, keeper=args.keeper)
        return [one_fault(core, namespace, args.how, args.rank, args.keeper, n) for n in range(args.faults)]
    finally:
        core.delete_namespace(namespace)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--how", choices=("evict", "delete", "crash"), default="evict",
        help="the Eviction API, a deletion, or the broker SIGKILLed",
    )  # fmt: skip
    parser.add_argument("--rank", type=int, choices=(0, 1), default=0, help="rank 0's pod, or the worker's")
    parser.add_argument(
        "--faults", type=int, default=1,
        help="faults in a row in each run's MiniCluster (the Job controller's back-off grows with each)",
    )  # fmt: skip
    parser.add_argument(
        "--replacement-policy", default="", help="the Job's podReplacementPolicy instead of the builder's"
    )
    parser.add_argument("--keeper", action="store_true", help="the MiniCluster's keeper replaces the lost pod")
    args = parser.parse_args()
    plane = ControlPlane.attach(Path(os.environ["MC_CONTROL_PLANE"]))
    node = yaml.safe_load((Path(os.environ["MC_NODE"]) / NODE_STATE).read_text())["name"]
    core = client.CoreV1Api(config.new_client_from_config(str(plane.kubeconfig)))  # type: ignore[no-untyped-call]
    runs = []
    with tempfile.TemporaryDirectory() as directory:
        for index in range(args.runs):
            runs.append(faults_in_a_row(plane, core, node, Path(directory), args))
            for fault, seen in enumerate(runs[-1], 1):
                print(f"run {index + 1}, fault {fault}: " + ", ".join(f"{s} {at:.2f}s" for s, at in seen.items()))
    columns = " | ".join(f"fault {fault}" for fault in range(1, args.faults + 1))
    print(f"| step ({args.how}, rank {args.rank}; s after the fault, median) | {columns} |")
    print("| --- |" + " ---: |" * args.faults)
    for step in STEPS:
        cells = []
        for fault in range(args.faults):
            times = [run[fault][step] for run in runs if step in run[fault]]
            cells.append(f"{statistics.median(times):.2f}" if times else "not seen")
        print(f"| {step} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
