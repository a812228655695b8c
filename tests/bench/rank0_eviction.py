#!/usr/bin/env python3
"""Where a persistent MiniCluster's recovery time goes when rank 0's pod is evicted, on the real control
plane (its real Job controller makes the replacement) and the real node (real containers), with real
Flux: a MiniCluster of 2 brokers with a state volume (a hostPath in a folder of this run's, pinned to
the node), one job holding every node and two queued behind it; then rank 0's pod is evicted through
the Eviction API (or, with --how delete, deleted). Each step is timed from then by what a watch on the
pods saw (the API's own times have whole seconds): the old pod terminating, its broker container
ended, the pod Failed, the replacement created, scheduled, its broker container running, Ready; and
the first queued job's own start (it prints its time). Printed as a table of medians over the runs.

    MC_CONTROL_PLANE=DIR MC_NODE=DIR venv/bin/python -m tests.bench.rank0_eviction --runs 3

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
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config, watch

from flux_minicluster.config.spec import BROKER_CONTAINER
from tests.bench.rendered import apply, rendered, stack_file
from tests.engines.control_plane import ControlPlane
from tests.engines.node import NODE_STATE
from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.stacks import flux_command, pod_exec
from tests.realengine.on_node import ready

STEPS = (
    "rank 0's pod terminating", "its broker exited", "the pod Failed", "the replacement created",
    "the replacement scheduled", "its broker running", "the replacement Ready", "the first queued job started",
)  # fmt: skip


class PodWatch:
    """The first moment (this machine's clock) each step was seen, from a watch on the namespace's pods:
    those of the pod `rank0` (rank 0's before the eviction), then those of its replacement."""

    def __init__(self, core: client.CoreV1Api, namespace: str, rank0: str) -> None:
        self.seen: dict[str, float] = {}
        self.rank0 = rank0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._watch, args=(core, namespace), daemon=True)
        self.thread.start()

    def mark(self, step: str) -> None:
        self.seen.setdefault(step, time.time())

    def _watch(self, core: client.CoreV1Api, namespace: str) -> None:
        selector = "batch.kubernetes.io/job-completion-index=0"
        for event in watch.Watch().stream(core.list_namespaced_pod, namespace, label_selector=selector):  # type: ignore[no-untyped-call]
            if self.stopping.is_set():
                return
            pod: Any = event["object"]
            if pod.metadata.name == self.rank0:
                self._old(pod)
            elif "rank 0's pod terminating" in self.seen:
                self._new(pod)

    def _old(self, pod: Any) -> None:
        if pod.metadata.deletion_timestamp is not None:
            self.mark("rank 0's pod terminating")
        broker = [s for s in pod.status.container_statuses or [] if s.name == BROKER_CONTAINER]
        if broker and broker[0].state.terminated is not None:
            self.mark("its broker exited")
        if pod.status.phase == "Failed":
            self.mark("the pod Failed")

    def _new(self, pod: Any) -> None:
        self.mark("the replacement created")
        if pod.spec.node_name:
            self.mark("the replacement scheduled")
        broker = [s for s in pod.status.container_statuses or [] if s.name == BROKER_CONTAINER]
        if broker and broker[0].state.running is not None:
            self.mark("its broker running")
        if ready(pod):
            self.mark("the replacement Ready")


def flux(core: client.CoreV1Api, namespace: str, pod: str, *argv: str) -> str:
    return pod_exec(core, namespace, pod, *flux_command(*argv))


def rank0_pod(core: client.CoreV1Api, namespace: str) -> Any:
    """Rank 0's pod that is not terminating, if there is one, Ready or not."""
    selector = "batch.kubernetes.io/job-completion-index=0"
    found: Any = core.list_namespaced_pod(namespace, label_selector=selector)
    pods = [p for p in found.items if not p.metadata.deletion_timestamp]
    return pods[0] if pods else None


def ready_rank0(core: client.CoreV1Api, namespace: str, other_than: str = "") -> Any:
    """Rank 0's pod once it is Ready (and not the pod `other_than`), else None."""
    pod = rank0_pod(core, namespace)
    return pod if pod is not None and pod.metadata.name != other_than and ready(pod) else None


def one_run(
    plane: ControlPlane, core: client.CoreV1Api, node: str, folder: Path, policy: str, how: str
) -> dict[str, float]:
    namespace = f"bench-{secrets.token_hex(4)}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    try:
        keys = {**example("interactive"), "size": 2, "namespace": namespace, "keygen": "local",
                "stateVolume": {"hostPath": str(folder / namespace), "checkpointPeriod": "1s"},
                "pod": {"nodeSelector": {"kubernetes.io/hostname": node}},
                # A deletion is a failure that counts (docs/lost-pods.md): a Job that survives one.
                **({"backoffLimit": 3} if how == "delete" else {})}  # fmt: skip
        objects = [obj for obj in yaml.safe_load_all(rendered(stack_file(folder, keys))) if obj]
        for obj in objects:
            if obj["kind"] == "Job" and policy:  # another replacement policy, to compare
                obj["spec"]["podReplacementPolicy"] = policy
                if policy != "Failed":  # the API server allows only Failed with a podFailurePolicy
                    obj["spec"].pop("podFailurePolicy", None)
                    obj["spec"]["backoffLimit"] = 3  # so the disruption, counted now, does not fail the Job
        apply(plane, yaml.safe_dump_all(objects), folder)
        name = wait_until(lambda: ready_rank0(core, namespace), "ready rank 0", 120, poll=0.1).metadata.name
        online = ["resource", "status", "-no", "{ranks}", "-s", "online"]
        wait_until(lambda: flux(core, namespace, name, *online).strip() == "0-1", "both ranks online", 120, poll=0.1)
        flux(core, namespace, name, "submit", "-N2", "sleep", "inf")
        queued = [flux(core, namespace, name, "submit", "-N1", "date", "+%s.%N").strip() for _ in range(2)]
        time.sleep(2)  # a checkpoint (checkpointPeriod 1s) holds the queue
        watcher = PodWatch(core, namespace, name)
        time.sleep(0.5)
        evicted = time.time()
        if how == "delete":
            core.delete_namespaced_pod(name, namespace)
        else:
            eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
            core.create_namespaced_pod_eviction(name, namespace, eviction)
        new = wait_until(lambda: ready_rank0(core, namespace, other_than=name), "a new ready rank 0", 120, poll=0.1)
        # Blocks until the first queued job has run in the restarted instance: it prints when it started.
        started = float(flux(core, namespace, new.metadata.name, "job", "attach", queued[0]).strip())
        watcher.seen["the first queued job started"] = started
        watcher.stopping.set()
        return {step: watcher.seen[step] - evicted for step in STEPS if step in watcher.seen}
    finally:
        core.delete_namespace(namespace)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--how", choices=("evict", "delete"), default="evict", help="the Eviction API, or a deletion")
    parser.add_argument(
        "--replacement-policy", default="", help="the Job's podReplacementPolicy instead of the builder's"
    )
    args = parser.parse_args()
    plane = ControlPlane.attach(Path(os.environ["MC_CONTROL_PLANE"]))
    node = yaml.safe_load((Path(os.environ["MC_NODE"]) / NODE_STATE).read_text())["name"]
    core = client.CoreV1Api(config.new_client_from_config(str(plane.kubeconfig)))  # type: ignore[no-untyped-call]
    runs = []
    with tempfile.TemporaryDirectory() as directory:
        for index in range(args.runs):
            runs.append(one_run(plane, core, node, Path(directory), args.replacement_policy, args.how))
            print(f"run {index + 1}: " + ", ".join(f"{step} {at:.2f}s" for step, at in runs[-1].items()), flush=True)
    print("| step | seen after the eviction (s, median) |\n| --- | ---: |")
    for step in STEPS:
        times = [run[step] for run in runs if step in run]
        print(f"| {step} | {statistics.median(times):.2f} |" if times else f"| {step} | not seen |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
