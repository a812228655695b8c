#!/usr/bin/env python3
"""How long after the cluster is done does `pulumi up` (a persistent MiniCluster) or `pulumi destroy`
return? Real Flux brokers in the Job's pods on this machine (tests/kubelet), mirrored into the API
server stand-in (tests/kube_api) as the kubelet reports them: each pod appears with its labels, its
readiness probe runs on its own schedule (periodSeconds, each run within its timeout) and sets the
pod's Ready condition, and a pod whose container has exited is deleted. Against that API the real
client runs what the MiniCluster's resources run:
  - up: the Scale resource's wait for the brokers (cluster/scale.py), timed from the last broker
    entering the instance's run state (its log) to the wait's return;
  - destroy: JobDeletion's wait (cluster/deletion.py), with the Job deleted and every pod told to stop
    (SIGTERM), timed from the last pod gone to the wait's return.

    venv/bin/python -m tests.bench.waits                # size 4, 5 runs
    venv/bin/python -m tests.bench.waits --size 8 --runs 3

Needs root (namespaces) and flux-core 0.88 installed (MC_FLUX_PREFIX, default /opt/flux: tests/kubelet/image.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from flux_minicluster.builders.names import INDEX_LABEL, labels, scale_config_name
from flux_minicluster.cluster import deletion, kube, scale
from flux_minicluster.config.loader import load_spec
from tests.bench.spread import spread
from tests.conftest import config
from tests.kube_api import Cluster, StandIn, running
from tests.kubelet.pod import Pod
from tests.kubelet.pods import Kubelet

Json = dict[str, Any]


class Mirror:
    """The test kubelet's pods, as a kubelet reports them to the API server (the stand-in)."""

    def __init__(self, kubelet: Kubelet, api: Cluster) -> None:
        self.kubelet, self.api = kubelet, api
        self.joined: dict[str, float] = {}  # pod -> when its broker entered the run state
        self.gone: dict[str, float] = {}  # pod -> when it was deleted from the API
        self.template: Json = kubelet.job["spec"]["template"]

    def start(self, pod: Pod, index: int) -> None:
        metadata = {"name": pod.name, "namespace": self.kubelet.namespace,
                    "labels": {**self.template["metadata"]["labels"], INDEX_LABEL: str(index)}}  # fmt: skip
        spec = {**self.template["spec"], "nodeName": "node-0"}
        self.api.add_pod({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
                          "status": running("flux-broker")})  # fmt: skip
        for target in (self._probe, self._joined, self._reap):
            threading.Thread(target=target, args=(pod,), daemon=True).start()

    def _probe(self, pod: Pod) -> None:
        """The kubelet's readiness worker: one run each period; the pod's Ready condition follows."""
        was = False
        for now in (run.said for run in pod.probes()):
            if now != was:
                self._set_ready(pod.name, now)
                was = now

    def _reap(self, pod: Pod) -> None:
        """The container has exited: the pod is gone from the API."""
        pod.process.wait()
        self.api.delete_pod(self.kubelet.namespace, pod.name)
        self.gone[pod.name] = time.monotonic()

    def _joined(self, pod: Pod) -> None:
        while pod.running() and "quorum->run" not in pod.log:
            time.sleep(0.005)
        self.joined[pod.name] = time.monotonic()

    def _set_ready(self, name: str, ready: bool) -> None:
        with self.api.lock:
            pod = self.api.pods.get((self.kubelet.namespace, name))
            if pod is None:  # gone already
                return
            pod["status"] = {**pod["status"], "conditions": [{"type": "Ready", "status": str(ready)}]}
            self.api._record("MODIFIED", pod)


def one_run(size: int, directory: Path) -> tuple[float, float]:
    spec = load_spec({f"minicluster:{key}": value for key, value in config(size=size, command=None).items()}, "dev")
    stand_in = StandIn(directory)
    kubelet = Kubelet(directory / "pods", spec)
    try:
        api = stand_in.cluster
        api.add_job(kubelet.job)
        name = scale_config_name(spec)
        api.config_maps[(spec.namespace, name)] = {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": name, "namespace": spec.namespace},
                                                   "data": {"size": str(size)}}  # fmt: skip
        os.environ["KUBECONFIG"] = str(stand_in.cluster.kubeconfig)
        client = kube.api_client(None)
        mirror = Mirror(kubelet, api)
        for index, pod in enumerate(kubelet.start_all()):
            mirror.start(pod, index)
        want = scale.Scale(
            namespace=spec.namespace, job=kubelet.job["metadata"]["name"], scale_config=name,
            selector=labels(spec, "broker"), size=size, min_size=None, max_size=size, shrink_policy="wait",
            shrink_timeout=60, job_timeout=60, schedule_timeout=60,
        )  # fmt: skip
        said = scale.resize(client, want)
        up = time.monotonic()
        assert said == [f"all {size} brokers are ready"], said
        up_after = up - max(mirror.joined.values())
        api.jobs.clear()  # Pulumi deleted the Job; the Job controller's pods are told to stop
        for pod in kubelet.pods:
            pod.signal(15)
        deletion.wait_until_gone(client, spec.namespace, want.job, want.selector, 60, say=lambda _line: None)
        down = time.monotonic()
        return up_after, down - max(mirror.gone.values())
    finally:
        kubelet.close()
        stand_in.stop()


def table(size: int, runs: int) -> str:
    ups, downs = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as directory:
            up, down = one_run(size, Path(directory))
        ups.append(up * 1000)
        downs.append(down * 1000)
    lines = [
        "| what | brokers | runs | min (ms) | median (ms) | max (ms) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, times in (("persistent `pulumi up`: last broker in the run state to the wait's return", ups),
                         ("`pulumi destroy`: last pod gone to the wait's return", downs)):  # fmt: skip
        lines.append(f"| {label} | {size} | {runs} | {spread(times, 0)} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=4, help="brokers (default 4)")
    parser.add_argument("--runs", type=int, default=5, help="runs (default 5)")
    args = parser.parse_args()
    print(table(args.size, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
