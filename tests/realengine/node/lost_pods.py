"""A rank's pod lost on the real control plane and node, and what follows, as a watch on the pods sees
it: the steps of the old pod's end and of the replacement the real Job controller makes, and the Flux
commands that read the instance through rank 0's pod. Shared by the eviction benchmark
(tests/bench/rank0_eviction.py) and the eviction test (test_rank0_eviction.py)."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kubernetes import client, config, watch

from flux_minicluster.builders.names import BROKER_CONTAINER, INDEX_LABEL
from tests.engines.control_plane import ControlPlane
from tests.flux_checkpoints import checkpointed
from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.conftest import required
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.node.stacks import StackOnRealNode, flux_command, pod_exec
from tests.realengine.on_node import ready
from tests.realengine.pulumi_stack import missing

STEPS = (
    "the pod terminating", "its broker exited", "the pod Failed", "the replacement created",
    "the replacement scheduled", "its broker running", "the replacement Ready", "the first queued job started",
    "the rank online again",
)  # fmt: skip


class PodWatch:
    """The first moment (this machine's clock) each step was seen, from a watch on the namespace's pods:
    those of the pod `lost` (the rank's before the fault), then those of its replacement. It returns once
    the watch has seen the pods as they are, so that no step of a fault made next is missed."""

    def __init__(self, core: client.CoreV1Api, namespace: str, lost: str, rank: int) -> None:
        self.seen: dict[str, float] = {}
        self.lost, self.rank = lost, rank
        self.stopping, watching = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._watch, args=(core, namespace, watching), daemon=True)
        self.thread.start()
        if not watching.wait(30):
            raise TimeoutError(f"the watch on {namespace}'s pods did not start")

    def mark(self, step: str) -> None:
        self.seen.setdefault(step, time.time())

    def _watch(self, core: client.CoreV1Api, namespace: str, watching: threading.Event) -> None:
        selector = f"{INDEX_LABEL}={self.rank}"
        for event in watch.Watch().stream(core.list_namespaced_pod, namespace, label_selector=selector):  # type: ignore[no-untyped-call]
            watching.set()  # the first events are the pods as they are (ADDED)
            if self.stopping.is_set():
                return
            pod: Any = event["object"]
            if pod.metadata.name == self.lost:
                self._old(pod)
            elif "its broker exited" in self.seen or "the pod terminating" in self.seen:
                self._new(pod)

    def _old(self, pod: Any) -> None:
        if pod.metadata.deletion_timestamp is not None:
            self.mark("the pod terminating")
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


ENDED = ("Succeeded", "Failed")


def live_rank_pods(core: client.CoreV1Api, namespace: str, rank: int = 0) -> list[Any]:
    """The rank's pods that are neither terminating nor ended (the Job keeps a failed one), Ready or not."""
    found: Any = core.list_namespaced_pod(namespace, label_selector=f"{INDEX_LABEL}={rank}")
    return [p for p in found.items if not p.metadata.deletion_timestamp and p.status.phase not in ENDED]


def rank_pod(core: client.CoreV1Api, namespace: str, rank: int = 0) -> Any:
    """The rank's live pod, if there is one."""
    pods = live_rank_pods(core, namespace, rank)
    return pods[0] if pods else None


def ready_rank(core: client.CoreV1Api, namespace: str, rank: int = 0) -> Any:
    """The rank's pod once it is Ready, else None."""
    pod = rank_pod(core, namespace, rank)
    return pod if pod is not None and ready(pod) else None


def queued_job_start(core: client.CoreV1Api, namespace: str, job: str) -> float | None:
    """When the queued job `job` started (it prints its start), through rank 0's pod of now once its
    broker answers; None while there is none, or its broker is not up (a crashed one restarts in place)."""
    pod = rank_pod(core, namespace)
    if pod is None:
        return None
    try:  # `flux job attach` blocks until the job has run
        return float(flux(core, namespace, pod.metadata.name, "job", "attach", job).strip())
    except ValueError:  # what flux said of a broker that is not up
        return None
    except client.ApiException:  # the container is not running (yet, or any more)
        return None


def lose(core: client.CoreV1Api, namespace: str, name: str, how: str) -> None:
    """The pod `name` evicted, deleted, or its broker crashed (SIGKILL, as the kernel's OOM killer does)."""
    if how == "delete":
        core.delete_namespaced_pod(name, namespace)
    elif how == "crash":
        pod_exec(core, namespace, name, "sh", "-c", f"kill -KILL $({' '.join(flux_command('getattr', 'broker.pid'))})")
    else:
        eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
        core.create_namespaced_pod_eviction(name, namespace, eviction)


ONLINE = ("resource", "status", "-no", "{ranks}", "-s", "online")


def both_online(core: client.CoreV1Api, namespace: str, rank0: str, size: int = 2) -> bool:
    """Every rank of a cluster of `size` (two, by default) online in rank 0's view."""
    return flux(core, namespace, rank0, *ONLINE).strip() == f"0-{size - 1}"


def rank0_evicted(plane: ControlPlane, node: NodeInfo, tmp: Path, **keys: Any) -> Iterator[Any]:
    """A persistent cluster of 2 with a state volume (`pulumi up`, the stack's `keys` added), a job done,
    one holding both nodes and two queued behind it; then rank 0's pod evicted. Yields what the pods'
    watch saw, the first queued job's start, the jobs, the old and new rank 0's names, and the client;
    the namespace is deleted after."""
    required(missing())
    admin = config.new_client_from_config(str(plane.kubeconfig))  # type: ignore[no-untyped-call]
    core, namespace = client.CoreV1Api(admin), f"t-{secrets.token_hex(4)}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    state = {"hostPath": str(tmp / "state"), "checkpointPeriod": "1s"}
    pinned = {"nodeSelector": {"kubernetes.io/hostname": node.name}}  # the hostPath is on this node
    stack_keys = {**example("interactive"), "size": 2, "stateVolume": state, "pod": pinned, **keys}
    try:
        StackOnRealNode(admin, plane, namespace, tmp / "stack", "persistent", stack_keys).stack.up()
        old = wait_until(lambda: ready_rank(core, namespace), "a ready rank 0", 120, poll=0.1).metadata.name
        wait_until(lambda: both_online(core, namespace, old), "both ranks online", 120, poll=0.1)
        done = flux(core, namespace, old, "submit", "--wait", "true").strip()
        flux(core, namespace, old, "submit", "-N2", "sleep", "inf")
        queued = [flux(core, namespace, old, "submit", "-N1", "date", "+%s.%N").strip() for _ in range(2)]
        checkpointed(lambda *argv: flux(core, namespace, old, *argv))  # the queue is in the saved state
        watch = PodWatch(core, namespace, old, 0)
        evicted_at = time.time()
        lose(core, namespace, old, "evict")
        first_start = wait_until(lambda: queued_job_start(core, namespace, queued[0]), "the first queued job", 180)
        # The old pod's end may come after the first queued job ran (the saved instance's lock waits for its
        # broker to exit, not for its pod to be Failed): the watch, which drops what comes once it is told to
        # stop, is stopped only once it has seen that end.
        wait_until(lambda: "the pod Failed" in watch.seen, "the evicted pod Failed", 60, poll=0.1)
        watch.stopping.set()
        new = wait_until(lambda: ready_rank(core, namespace), "a ready rank 0", 60).metadata.name
        yield SimpleNamespace(seen=watch.seen, first_start=first_start, done=done, queued=queued, old=old, new=new,
                              core=core, namespace=namespace, evicted_at=evicted_at)  # fmt: skip
    finally:
        core.delete_namespace(namespace)


def after_the_eviction(evicted: Any) -> tuple[float, list[str]]:
    """What rank 0's replacement says after `rank0_evicted`: the second queued job's start (it waits for
    the job), and the inactive jobs with their results."""
    core, namespace, new = evicted.core, evicted.namespace, evicted.new
    second = float(flux(core, namespace, new, "job", "attach", evicted.queued[1]).strip())
    return second, flux(core, namespace, new, "jobs", "-no", "{id.f58} {result}", "--filter=inactive").split("\n")
