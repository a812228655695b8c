#!/usr/bin/env python3
"""The soak on the real control plane and the real node (issue 50): a persistent MiniCluster of 4
brokers on real Flux in real containers, rank 0's state on a hostPath, fed batches of short jobs through
rank 0's pod, while faults come one after another in a seeded order. The real Job controller makes every
replacement, so its back-off (10 s for the Job's first lost pod, doubling with each one after it) is in
the recovery times, as it is in a user's cluster; with --keeper the MiniCluster's keeper replaces the
evicted rank 0 instead, at once. Faults:
  worker deleted    a worker's pod deleted through the API (SIGTERM, then its grace period)
  worker killed     a worker container's processes SIGKILLed from the node (a node that died)
  rank 0 evicted    rank 0's pod evicted through the Eviction API: its hand-over runs
  rank 0 killed     rank 0 container's processes SIGKILLed from the node: no hand-over
  worker cut off    a worker's network link down in its pod for CUT_OFF seconds, then up
Recovery is timed from the fault's end (the kill, the eviction, the link back up) to every rank online
and none drained in rank 0's view, and to a job run after that. Each submitted job is accounted for at
the end, in Flux's own words; a batch rank 0 could not take (away, or not up yet) is counted as refused.

    MC_CONTROL_PLANE=DIR MC_NODE=DIR venv/bin/python -m tests.soak.real_node              # 5 faults, seed 1
    MC_CONTROL_PLANE=DIR MC_NODE=DIR venv/bin/python -m tests.soak.real_node --seed 3 --faults 3
    MC_CONTROL_PLANE=DIR MC_NODE=DIR venv/bin/python -m tests.soak.real_node --keeper   # evictions: the keeper's

Needs root (it acts on the node's processes), a running control plane and real node (as `.ci/run`
starts them) and flux-core in the node's image (MC_FLUX_PREFIX when the node started).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import secrets
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from tests.bench.rank0_eviction import deploy
from tests.engines.control_plane import ControlPlane
from tests.engines.node import NODE_STATE
from tests.kubelet.pod import wait_until
from tests.realengine.node.lost_pods import both_online, flux, lose, rank_pod, ready_rank

SIZE = 4
FAULTS = ("worker deleted", "worker killed", "rank 0 evicted", "rank 0 killed", "worker cut off")
CUT_OFF = 20.0
RECOVERY_TIMEOUT = 900.0
"""Seconds a recovery may take: the Job controller's back-off alone reaches 160 s at the fifth lost pod."""
BATCH_EVERY = 3.0
END_WAIT = 180.0
"""Seconds the jobs in the queue at the end may take to run."""
BATCH = 2
"""Jobs a batch: about what the 2-core machine's four brokers in real containers run in BATCH_EVERY, so
that the queue does not grow without end (it did at three every two seconds: 299 pending after 6 min)."""


def pod_processes(pod: Any, *, sandbox: bool = False) -> list[int]:
    """The node's processes of the pod's containers (not its sandbox's pause), by its cgroup; with
    `sandbox`, the pause process alone, which holds the pod's network namespace for the pod's life."""
    uid = pod.metadata.uid
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            groups = (entry / "cgroup").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")[0]
        except OSError:  # gone meanwhile
            continue
        in_pod = f"pod{uid}" in groups or f"pod{uid.replace('-', '_')}" in groups
        if in_pod and command.endswith(b"/pause") == sandbox:
            found.append(int(entry.name))
    return found


def kill(pod: Any) -> None:
    for pid in pod_processes(pod):
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile
            os.kill(pid, signal.SIGKILL)


def cut_off(pod: Any, seconds: float) -> None:
    """The pod's link down for `seconds`, then up with its routes as they were: the kernel drops the
    routes through a link that goes down, and the default one (to the Services, DNS included) would not
    come back with the link. The namespace is entered through the pause process: a container's process
    may end during the cut (a broker that restarts, a probe), and the link could not be put back up."""
    (pause,) = pod_processes(pod, sandbox=True)
    in_pod = ["nsenter", "-t", str(pause), "-n", "ip"]
    routes = json.loads(subprocess.run([*in_pod, "-j", "route", "show", "default"], capture_output=True,
                                       text=True, check=True).stdout)  # fmt: skip
    subprocess.run([*in_pod, "link", "set", "eth0", "down"], check=True)
    time.sleep(seconds)
    subprocess.run([*in_pod, "link", "set", "eth0", "up"], check=True)
    for route in routes:
        via = ["via", route["gateway"], "dev", route["dev"]]
        subprocess.run([*in_pod, "route", "replace", "default", *via], check=True)


class Feeder:
    """Batches of jobs (one, two or all four nodes; `sleep` 0.2 to 1 s) submitted through rank 0's pod of
    the moment, every BATCH_EVERY seconds, until stopped: the ids Flux gave, and the batches refused.
    It has a client of its own: the client's exec patches its ApiClient for as long as it runs."""

    def __init__(self, plane: ControlPlane, namespace: str, rng: random.Random) -> None:
        api_client = config.new_client_from_config(str(plane.kubeconfig))  # type: ignore[no-untyped-call]
        self.core, self.namespace, self.rng = client.CoreV1Api(api_client), namespace, rng
        self.submitted: dict[str, float] = {}
        self.refused = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.thread.start()

    def _feed(self) -> None:
        while not self.stopping.wait(BATCH_EVERY):
            nodes, seconds = self.rng.choice((1, 2, SIZE)), f"{self.rng.uniform(0.2, 1.0):.2f}"
            pod = ready_rank(self.core, self.namespace)
            try:
                if pod is None:
                    raise RuntimeError("no ready rank 0")
                said = flux(self.core, self.namespace, pod.metadata.name, "submit", f"--cc=1-{BATCH}", f"-N{nodes}",
                            "sleep", seconds)  # fmt: skip
                ids = said.split()
                if len(ids) != BATCH or not all(job.startswith("ƒ") or job.isalnum() for job in ids):
                    raise RuntimeError(said)
                self.submitted.update(dict.fromkeys(ids, time.time()))
            except Exception:  # rank 0 away or not up: the submission was never accepted
                self.refused += 1


def whole(core: client.CoreV1Api, namespace: str) -> bool:
    """Every rank online and none drained, in rank 0's view."""
    pod = ready_rank(core, namespace)
    if pod is None:
        return False
    try:
        if not both_online(core, namespace, pod.metadata.name, SIZE):
            return False
        drained = flux(core, namespace, pod.metadata.name, "resource", "status", "-s", "drain", "-no", "{ranks}")
    except client.ApiException:
        return False
    return not drained.strip()


def a_job_runs(core: client.CoreV1Api, namespace: str) -> bool:
    pod = ready_rank(core, namespace)
    if pod is None:
        return False
    try:
        # Expedited (urgency 31): it asks whether the scheduler places new work, not how long the backlog is.
        said = flux(core, namespace, pod.metadata.name, "run", "--urgency=31", "-N1", "echo", "moving")
        return said.strip() == "moving"
    except client.ApiException:
        return False


def fault(core: client.CoreV1Api, namespace: str, kind: str, rng: random.Random) -> None:
    """The fault, done: returns at its end (the kill, the eviction, the link back up)."""
    rank = 0 if kind.startswith("rank 0") else rng.randrange(1, SIZE)
    pod = rank_pod(core, namespace, rank)
    if kind == "worker deleted":
        lose(core, namespace, pod.metadata.name, "delete")
    elif kind == "rank 0 evicted":
        lose(core, namespace, pod.metadata.name, "evict")
    elif kind.endswith("killed"):
        kill(pod)
    else:
        cut_off(pod, CUT_OFF)


def one_run(plane: ControlPlane, core: client.CoreV1Api, node: str, folder: Path, args: argparse.Namespace) -> Any:
    rng = random.Random(args.seed)
    kinds = [FAULTS[index % len(FAULTS)] for index in range(args.faults)]
    rng.shuffle(kinds)
    namespace = f"soak-{secrets.token_hex(4)}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    try:
        deploy(plane, core, node, folder, namespace, "", "kill", size=SIZE, keeper=args.keeper)
        wait_until(lambda: whole(core, namespace), "every rank online", 120, poll=0.2)
        feeder = Feeder(plane, namespace, rng)
        recoveries: list[tuple[str, float, float]] = []
        faults_at: list[tuple[float, str]] = []
        for kind in kinds:
            time.sleep(5)  # jobs in flight when the fault comes
            began = time.time()
            fault(core, namespace, kind, rng)
            ended = time.time()
            faults_at.append((began, kind))
            if kind != "worker cut off":  # a cut is over when the link is back: rank 0 may see it whole at once
                wait_until(lambda: not whole(core, namespace), "the fault seen", 60, poll=0.2)
            wait_until(lambda: whole(core, namespace), f"recovery from {kind}", RECOVERY_TIMEOUT, poll=0.2)
            available = time.time() - ended
            wait_until(lambda: a_job_runs(core, namespace), "a job to run", RECOVERY_TIMEOUT, poll=0.2)
            recoveries.append((kind, available, time.time() - ended))
            print(f"{kind}: every rank available after {available:.1f} s, the queue moving after "
                  f"{recoveries[-1][2]:.1f} s", flush=True)  # fmt: skip
        feeder.stopping.set()
        feeder.thread.join()
        rank0 = wait_until(lambda: ready_rank(core, namespace), "rank 0", 60).metadata.name
        with contextlib.suppress(TimeoutError):  # what has not ended by then is counted as still active
            wait_until(lambda: not flux(core, namespace, rank0, "jobs", "-no", "{id}").strip(), "the jobs", END_WAIT)
        shown = "{id.f58}|{result}|{exception.type}: {exception.note}"
        listed = flux(core, namespace, rank0, "jobs", "-a", "-c", "100000", "-no", shown)
        results = {job: (result, why) for job, result, why in (line.split("|", 2) for line in listed.splitlines())}
        ends = Counter(results.get(job, ("lost", ""))[0] or "still active" for job in feeder.submitted)
        for job, submitted_at in feeder.submitted.items():
            if job not in results:  # which fault took it: the contract allows a killed rank 0's last period
                after = [(at - submitted_at, kind) for at, kind in faults_at if at >= submitted_at]
                print(f"lost: {job}, its ID returned " + (f"{after[0][0]:.2f} s before {after[0][1]}" if after
                                                          else "after the last fault"), flush=True)  # fmt: skip
        reasons = Counter(results[job][1] for job in feeder.submitted if results.get(job, ("",))[0] == "FAILED")
        return recoveries, ends, reasons, feeder.refused, len(feeder.submitted)
    finally:
        core.delete_namespace(namespace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults", type=int, default=len(FAULTS))
    parser.add_argument("--keeper", action="store_true", help="the MiniCluster's keeper replaces evicted pods")
    args = parser.parse_args()
    plane = ControlPlane.attach(Path(os.environ["MC_CONTROL_PLANE"]))
    node = yaml.safe_load((Path(os.environ["MC_NODE"]) / NODE_STATE).read_text())["name"]
    core = client.CoreV1Api(config.new_client_from_config(str(plane.kubeconfig)))  # type: ignore[no-untyped-call]
    with tempfile.TemporaryDirectory() as directory:
        recoveries, ends, reasons, refused, submitted = one_run(plane, core, node, Path(directory), args)
    print(f"\nseed {args.seed}: {submitted} jobs submitted ({refused} batches refused): "
          + ", ".join(f"{count} {end}" for end, count in sorted(ends.items())))  # fmt: skip
    for why, count in reasons.most_common():  # each failure in Flux's own words
        print(f"  {count} failed with {why}")
    print("\n| fault | every rank available (s) | queue moving (s) |\n| --- | ---: | ---: |")
    for kind, available, moving in recoveries:
        print(f"| {kind} | {available:.1f} | {moving:.1f} |")
    if len(recoveries) > 1:
        print(f"(median queue moving: {statistics.median(moving for _, _, moving in recoveries):.1f} s)")


if __name__ == "__main__":
    main()
