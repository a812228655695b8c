"""The test kubelet as a Node of a real API server (tests/engines/control_plane.py): it registers a Node,
runs the pods the real scheduler binds to it with real Flux (pods.py), and reports what a kubelet
reports: each pod's phase, address, conditions (Ready from the readiness probe) and container states,
its end (Succeeded or Failed, with the exit codes), and, for a pod the API server is deleting (the
Job controller shrinking the Job), its stop within its grace period and the final delete.

The pods reach the API server at the `kubernetes` Service's address, as on a cluster, with service
account tokens from the TokenRequest API (api_reach.py). The API server reaches the Node's streaming
server (tests/kubelet/streaming) at the Node's address for the pods' logs and exec. A pod that is not
one of the Job's (the keygen pod) runs alone (single_pod.py). ConfigMap changes reach the mounted
files, as the kubelet's sync does. Every thread, watch, process and Node ends with `close`.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import subprocess
import threading
import traceback
from collections.abc import Iterator
from typing import Any

import urllib3
from kubernetes import client, watch

from flux_minicluster.builders.names import BROKER_CONTAINER, INDEX_LABEL
from tests.engines.control_plane import ControlPlane
from tests.engines.versions import STREAMING_BIN
from tests.kubelet import single_pod
from tests.kubelet.api_reach import ServiceRelay, as_manifest, live_objects
from tests.kubelet.pod import DEFAULT_GRACE_SECONDS, Pod, end_all
from tests.kubelet.pods import Kubelet
from tests.kubelet.volumes import Manifest

WATCH_SECONDS = 5
"""How long one watch request lasts before the next: `close` is noticed within it."""
GONE = (client.ApiException, urllib3.exceptions.HTTPError)
"""What a report may meet: the pod gone meanwhile, or the API server (a test's own) stopped before it."""
NODE_LABEL = "minicluster.test/node"
"""The label a test's pods select its own Node by (pod.nodeSelector): tests side by side share a scheduler.
The Node is tainted with it too, so that no other pod lands there (the real node's, which select none)."""


def selecting(label: str) -> dict[str, Any]:
    """The pod settings (config key `pod`) that put a test's pods on its own Node labelled `label`, and
    only there."""
    toleration = {"key": NODE_LABEL, "operator": "Equal", "value": label, "effect": "NoSchedule"}
    return {"nodeSelector": {NODE_LABEL: label}, "tolerations": [toleration]}


def events(watcher: watch.Watch, call: Any, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
    """One watch request's events (ADDED, MODIFIED, DELETED), for WATCH_SECONDS at most, or until
    `watcher.stop()` shuts its connection."""
    stream: Iterator[dict[str, Any]] = watcher.stream(  # type: ignore[no-untyped-call]
        call, *args, timeout_seconds=WATCH_SECONDS, **kwargs
    )
    return stream


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def grace_period(pod: Any) -> int:
    """The seconds a deleted pod's containers get between SIGTERM and SIGKILL, as the kubelet reckons
    them (pod_workers.go, calculateEffectiveGracePeriod): the API server's deletionGracePeriodSeconds,
    which the delete request set (the provider deletes the keygen pod with 0), else the pod's
    terminationGracePeriodSeconds (Kubernetes' default when unset); never under 1."""
    grace = pod.metadata.deletion_grace_period_seconds
    if grace is None:
        grace = pod.spec.termination_grace_period_seconds
    return max(1, DEFAULT_GRACE_SECONDS if grace is None else grace)


class Node:
    """`kubelet`'s pods as a Node of the control plane runs them: registered, watched, reported."""

    def __init__(
        self, kubelet: Kubelet, plane: ControlPlane, admin: client.ApiClient, label: str, name: str | None = None
    ) -> None:
        """`label`: the value of NODE_LABEL on this Node, which the test's pods select. `name`: its own
        (and its kubernetes.io/hostname label's), if the test must know it beforehand."""
        self.kubelet, self.admin, self.label = kubelet, admin, label
        self.live = not kubelet.objects
        """Whether the Job's objects come from the API server (a real `pulumi up`), not from the kubelet."""
        self.core = client.CoreV1Api(admin)
        self.name = name or f"node-{kubelet.network.tag}"
        self.relay = ServiceRelay(kubelet.network, plane, admin, kubelet.tmp / "api")
        kubelet.reach_api(self.relay)
        self.pods: dict[str, Pod] = {}
        self.deleting: set[str] = set()
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self.records = kubelet.tmp / "streaming"
        self.streaming = subprocess.Popen(
            [str(STREAMING_BIN / "kubelet-streaming"), f"--records={self.records}"], stdout=subprocess.PIPE, text=True
        )
        assert self.streaming.stdout is not None
        self.port = int(self.streaming.stdout.readline())
        self._register()
        # Stopped by close(), which so need not wait for the API server to end a watch (WATCH_SECONDS).
        self.pod_watch, self.config_map_watch = watch.Watch(), watch.Watch()  # type: ignore[no-untyped-call]
        self.threads = [threading.Thread(target=self._watch_pods, daemon=True),
                        threading.Thread(target=self._watch_config_maps, daemon=True)]  # fmt: skip
        for thread in self.threads:
            thread.start()

    def _register(self) -> None:
        capacity = {"cpu": "64", "memory": "256Gi", "pods": "110"}
        node = client.V1Node(metadata=client.V1ObjectMeta(name=self.name, labels={
            "kubernetes.io/hostname": self.name, "kubernetes.io/os": "linux", NODE_LABEL: self.label}))  # fmt: skip
        self.core.create_node(node)
        status = {"capacity": capacity, "allocatable": capacity,
                  "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                  "lastHeartbeatTime": now(), "lastTransitionTime": now()}],
                  "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                                {"type": "Hostname", "address": self.name}],
                  "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port}}}  # fmt: skip
        self.core.patch_node_status(self.name, {"status": status})
        # The API server taints a new Node not-ready (TaintNodesByCondition); the node lifecycle
        # controller, which this control plane does not run, lifts it once the Node says Ready. The
        # Node's own taint keeps the pods of others (the real node's) off it.
        taint = {"key": NODE_LABEL, "value": self.label, "effect": "NoSchedule"}
        self.core.patch_node(self.name, {"spec": {"taints": [taint]}})

    # -- the pods bound to this node ---------------------------------------------------------------

    def _watch_pods(self) -> None:
        selector = f"spec.nodeName={self.name}"
        while not self.stopping.is_set():
            try:
                for event in events(self.pod_watch, self.core.list_pod_for_all_namespaces, field_selector=selector):
                    if self.stopping.is_set():
                        return
                    self._on_pod(event["type"], event["object"])
            except Exception:  # a watch that ended early (the next one lists anew), or a pod that failed
                if not self.stopping.is_set():  # to start: a test that then times out shows why
                    traceback.print_exc()

    def _on_pod(self, kind: str, pod: Any) -> None:
        """A pod bound here starts once; one being deleted (or gone) is stopped once."""
        name, going = pod.metadata.name, kind == "DELETED" or pod.metadata.deletion_timestamp is not None
        with self._lock:
            running = self.pods.get(name)
            if running is None and not going and pod.status.phase in (None, "Pending"):
                self.pods[name] = self._start(pod)
            if running is None or not going or name in self.deleting:
                return
            self.deleting.add(name)
        threading.Thread(target=self._stop, args=(pod, running, grace_period(pod)), daemon=True).start()

    def _start(self, pod: Any) -> Pod:
        if INDEX_LABEL not in (pod.metadata.labels or {}):  # not the Job's: the keygen pod
            return self._start_lone(pod)
        owner = pod.metadata.owner_references[0].uid if pod.metadata.owner_references else None
        if self.live and (not self.kubelet.objects or owner != self.kubelet.job["metadata"]["uid"]):
            # Under a real `pulumi up`: what it created, now that the Job is there (again, if it replaced it).
            self.kubelet.load(live_objects(self.admin, pod.metadata.namespace, pod.metadata.labels["job-name"]))
        index = int(pod.metadata.labels[INDEX_LABEL])
        started = self.kubelet.start(index, name=pod.metadata.name)
        self._record(pod, started, ended=False)
        address = self.kubelet.network.records[pod.metadata.name][0]
        self._status(pod, {"phase": "Running", "podIP": address, "podIPs": [{"ip": address}], "hostIP": "127.0.0.1",
                           "startTime": now(), **self._conditions(False),
                           "containerStatuses": self._containers(pod, False)})  # fmt: skip
        threading.Thread(target=self._follow, args=(pod, started), daemon=True).start()
        return started

    def _start_lone(self, pod: Any) -> Pod:
        directory = self.kubelet.tmp / "lone-pods" / pod.metadata.name
        started = single_pod.run(as_manifest(self.admin, pod), directory, self.kubelet.network.dns_dir)
        self._record(pod, started, ended=False)
        self._status(pod, {"phase": "Running", "hostIP": "127.0.0.1", "startTime": now(), **self._conditions(False),
                           "containerStatuses": self._containers(pod, False)})  # fmt: skip
        threading.Thread(target=self._follow, args=(pod, started), daemon=True).start()
        return started

    def _follow(self, pod: Any, running: Pod) -> None:
        """Readiness while it runs (the probe at its period, else Ready once running), then its end, as
        the kubelet reports them."""
        ready = False
        for said in (run.said for run in running.probes()) if running.probe else iter([True]):
            if said != ready and not self.stopping.is_set():
                ready = said
                self._status(pod, {**self._conditions(ready), "containerStatuses": self._containers(pod, ready)})
        code = running.wait(timeout=None)  # a pod runs as long as it runs: a persistent broker, for days
        self._record(pod, running, ended=True)
        if self.stopping.is_set() or pod.metadata.name in self.deleting:  # _stop reports it
            return
        terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error", "finishedAt": now()}
        self._status(pod, {"phase": "Succeeded" if code == 0 else "Failed", **self._conditions(False),
                           "containerStatuses": self._containers(pod, False, terminated)})  # fmt: skip

    def _stop(self, pod: Any, running: Pod, grace: float) -> None:
        """The API server is deleting the pod: its containers stop within the grace period, then the
        kubelet's final delete (grace 0) lets it go once its finalizers are done. The kubelet's Event
        says so first, as a kubelet records it for each container it stops."""
        self._event(pod, "Killing", f"Stopping container {BROKER_CONTAINER}")
        code = running.terminate(grace)
        terminated = {"exitCode": code, "reason": "Error" if code else "Completed", "finishedAt": now()}
        with contextlib.suppress(*GONE):
            self._status(pod, {"phase": "Failed" if code else "Succeeded", **self._conditions(False),
                               "containerStatuses": self._containers(pod, False, terminated)})  # fmt: skip
            self.core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)

    def _event(self, pod: Any, reason: str, message: str) -> None:
        meta = pod.metadata
        event = client.CoreV1Event(
            metadata=client.V1ObjectMeta(generate_name=f"{meta.name}.", namespace=meta.namespace),
            involved_object=client.V1ObjectReference(kind="Pod", name=meta.name, namespace=meta.namespace,
                                                     uid=meta.uid, api_version="v1"),
            reason=reason, message=message, type="Normal", first_timestamp=datetime.datetime.now(datetime.UTC),
            source=client.V1EventSource(component="kubelet", host=self.name), count=1,
        )  # fmt: skip
        with contextlib.suppress(*GONE):
            self.core.create_namespaced_event(meta.namespace, event)

    def _record(self, pod: Any, running: Pod, ended: bool) -> None:
        """What the streaming server (tests/kubelet/streaming) needs to serve each container's log and
        run commands in it, as the API server's `pods/log` and `pods/exec` ask."""
        folder = self.records / pod.metadata.namespace / pod.metadata.name
        folder.mkdir(parents=True, exist_ok=True)
        for container in (running.main, *running.sidecars):
            try:
                record = {"pid": container.pid, "exec": container.exec_prefix, "log": str(container.log_path),
                          "ended": ended}  # fmt: skip
            except RuntimeError:  # it ended before it started: nothing to serve but "container not found"
                continue
            staged = folder / f".{container.name}.json"
            staged.write_text(json.dumps(record))
            staged.replace(folder / f"{container.name}.json")

    def _status(self, pod: Any, status: Manifest) -> None:
        with contextlib.suppress(*GONE):
            self.core.patch_namespaced_pod_status(pod.metadata.name, pod.metadata.namespace, {"status": status})

    @staticmethod
    def _conditions(ready: bool) -> Manifest:
        said = "True" if ready else "False"
        kinds = {"PodScheduled": "True", "Initialized": "True", "ContainersReady": said, "Ready": said}
        return {"conditions": [{"type": kind, "status": value, "lastTransitionTime": now()}
                               for kind, value in kinds.items()]}  # fmt: skip

    @staticmethod
    def _containers(pod: Any, ready: bool, terminated: Manifest | None = None) -> list[Manifest]:
        state = {"terminated": terminated} if terminated else {"running": {"startedAt": now()}}
        return [{"name": container.name, "image": container.image, "imageID": "", "ready": ready,
                 "restartCount": 0, "started": terminated is None, "state": state}
                for container in pod.spec.containers]  # fmt: skip

    # -- the objects the pods mount -------------------------------------------------------------------

    def _watch_config_maps(self) -> None:
        """A changed ConfigMap reaches the pods that mount it (the kubelet's sync), here at once."""
        namespace = self.kubelet.namespace
        while not self.stopping.is_set():
            with contextlib.suppress(Exception):
                for event in events(self.config_map_watch, self.core.list_namespaced_config_map, namespace):
                    config_map, loaded = event["object"], self.kubelet.objects
                    known = loaded and ("ConfigMap", config_map.metadata.name) in self.kubelet.volumes.objects
                    if known and event["type"] == "MODIFIED":
                        self.kubelet.update("ConfigMap", config_map.metadata.name, config_map.data or {})

    def close(self) -> None:
        self.stopping.set()
        self.pod_watch.stop()  # type: ignore[no-untyped-call]
        self.config_map_watch.stop()  # type: ignore[no-untyped-call]
        for thread in self.threads:
            thread.join(timeout=WATCH_SECONDS + 5)
        with contextlib.suppress(client.ApiException):
            self.core.delete_node(self.name)
        self.streaming.kill()
        self.streaming.wait()
        # The lone pods (the keygen pod) are this Node's alone, and one may still be in its grace period
        # (_stop's thread, which dies with the test process): a test that ended then left it running.
        with self._lock:
            started = list(self.pods.values())
        end_all(started)
        with contextlib.suppress(subprocess.SubprocessError):
            self.kubelet.close()  # the Job's pods, its network, and the relay
