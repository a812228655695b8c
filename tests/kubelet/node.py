"""The test kubelet as a Node of a real API server (tests/engines/control_plane.py): it registers a Node,
runs the pods the real scheduler binds to it with real Flux (pods.py), and reports what a kubelet
reports: each pod's phase, address, conditions (Ready from the readiness probe) and container states,
its end (Succeeded or Failed, with the exit codes), and, for a pod the API server is deleting (the
Job controller shrinking the Job), its stop within its grace period and the final delete.

The pods reach the API server at the `kubernetes` Service's address, as on a cluster: that address
lives in the pod network's switch namespace, where a relay passes each connection on to the API
server on this machine's loopback (TLS end to end: the server's certificate names that address). Their
service account tokens come from the TokenRequest API. ConfigMap changes reach the mounted files, as
the kubelet's sync does. Every thread, watch and Node ends with `close`.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import select
import socket
import subprocess
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from flux_minicluster.builders.names import INDEX_LABEL
from tests.engines.control_plane import SERVICE_HOST, ControlPlane
from tests.engines.versions import STREAMING_BIN
from tests.kubelet.network import PodNetwork, ip, listening
from tests.kubelet.pod import Pod
from tests.kubelet.pods import Kubelet
from tests.kubelet.volumes import Manifest

API_PORT = 443
"""The `kubernetes` Service's port."""
WATCH_SECONDS = 5
"""How long one watch request lasts before the next: `close` is noticed within it."""
NODE_LABEL = "minicluster.test/node"
"""The label a test's pods select its own Node by (pod.nodeSelector): tests side by side share a scheduler."""


def events(call: Any, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
    """One watch request's events (ADDED, MODIFIED, DELETED), for WATCH_SECONDS at most."""
    stream: Iterator[dict[str, Any]] = watch.Watch().stream(  # type: ignore[no-untyped-call]
        call, *args, timeout_seconds=WATCH_SECONDS, **kwargs
    )
    return stream


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def token_dir(api: client.ApiClient, directory: Path, namespace: str, account: str, ca: Path) -> Path:
    """What Kubernetes projects for a container of that account: a token from the TokenRequest API, the
    cluster's CA and the namespace, readable by the pod's user whoever that is."""
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600))
    answer = client.CoreV1Api(api).create_namespaced_service_account_token(account, namespace, request)
    assert answer.status is not None and answer.status.token is not None
    directory.mkdir(parents=True, exist_ok=True)
    for file, text in {"token": answer.status.token, "ca.crt": ca.read_text(), "namespace": namespace}.items():
        (directory / file).write_text(text)
        (directory / file).chmod(0o644)
    return directory


def live_objects(api: client.ApiClient, namespace: str, job: str) -> list[Manifest]:
    """The Job `job` and the ConfigMaps and Secrets of its namespace as the API server holds them, as
    manifests (the Secrets' data decoded, as the kubelet writes their files)."""
    core = client.CoreV1Api(api)
    found: list[Any] = [client.BatchV1Api(api).read_namespaced_job(job, namespace)]
    found += core.list_namespaced_config_map(namespace).items
    manifests = [as_manifest(api, obj) | {"kind": type(obj).__name__.removeprefix("V1")} for obj in found]
    secret: Any
    for secret in core.list_namespaced_secret(namespace).items:
        data = {key: base64.b64decode(value).decode() for key, value in (secret.data or {}).items()}
        manifests.append({"kind": "Secret", "metadata": {"name": secret.metadata.name}, "stringData": data})
    return manifests


def as_manifest(api: client.ApiClient, obj: Any) -> Manifest:
    manifest: Manifest = api.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
    return manifest


class ServiceRelay:
    """The API server at the `kubernetes` Service's address inside the pod network, and the service
    accounts' files from the TokenRequest API."""

    def __init__(self, network: PodNetwork, plane: ControlPlane, admin: client.ApiClient, directory: Path) -> None:
        self.plane, self.admin, self.directory = plane, admin, directory
        self.host, self.port = SERVICE_HOST, API_PORT
        ip("addr", "add", f"{network.gateway}/16", "dev", "br0", namespace=network.switch)
        ip("addr", "add", f"{SERVICE_HOST}/32", "dev", "br0", namespace=network.switch)
        network.routes.append(SERVICE_HOST)
        self.listener = listening(network.switch, SERVICE_HOST, API_PORT)
        self.listener.settimeout(0.2)
        self.stopping = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                inside, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._relay, args=(inside,), daemon=True).start()

    def _relay(self, inside: socket.socket) -> None:
        """Bytes both ways until either side closes: the TLS session is the pod's with the API server."""
        with inside, socket.create_connection(("127.0.0.1", self.plane.port), timeout=10) as outside:
            ends = [inside, outside]
            while not self.stopping.is_set():
                readable, _, _ = select.select(ends, [], [], 0.5)
                for end in readable:
                    try:
                        data = end.recv(65536)
                        if data:
                            (outside if end is inside else inside).sendall(data)
                    except OSError:  # reset by either side: the connection is over, as a proxy sees it
                        data = b""
                    if not data:
                        return

    def service_account(self, namespace: str, name: str, rules: list[Manifest]) -> Path:
        """The account's files from the API server, whose RBAC judges the token by the account's real
        roles (`rules` are the stand-in's business)."""
        del rules
        return token_dir(self.admin, self.directory / f"account-{namespace}-{name}", namespace, name, self.plane.ca)

    def stop(self) -> None:
        self.stopping.set()
        self.listener.close()


class Node:
    """`kubelet`'s pods as a Node of the control plane runs them: registered, watched, reported."""

    def __init__(self, kubelet: Kubelet, plane: ControlPlane, admin: client.ApiClient, label: str) -> None:
        """`label`: the value of NODE_LABEL on this Node, which the test's pods select."""
        self.kubelet, self.admin, self.label = kubelet, admin, label
        self.core = client.CoreV1Api(admin)
        self.name = f"node-{kubelet.network.tag}"
        kubelet.reach_api(ServiceRelay(kubelet.network, plane, admin, kubelet.tmp / "api"))
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
        # controller, which this control plane does not run, lifts it once the Node says Ready.
        self.core.patch_node(self.name, {"spec": {"taints": None}})

    # -- the pods bound to this node ---------------------------------------------------------------

    def _watch_pods(self) -> None:
        selector = f"spec.nodeName={self.name}"
        while not self.stopping.is_set():
            try:
                for event in events(self.core.list_pod_for_all_namespaces, field_selector=selector):
                    if self.stopping.is_set():
                        return
                    self._on_pod(event["type"], event["object"])
            except Exception:  # a watch that ended early (the next one lists anew), or a pod that failed
                traceback.print_exc()  # to start: a test that then times out shows why

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
        grace = pod.spec.termination_grace_period_seconds
        threading.Thread(target=self._stop, args=(pod, running, 30 if grace is None else grace), daemon=True).start()

    def _start(self, pod: Any) -> Pod:
        if not self.kubelet.objects:  # under a real `pulumi up`: what it created, now that the Job is there
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

    def _follow(self, pod: Any, running: Pod) -> None:
        """Readiness while it runs (the probe at its period), then its end, as the kubelet reports them."""
        ready = False
        for _, said in running.probes():
            if said != ready and not self.stopping.is_set():
                ready = said
                self._status(pod, {**self._conditions(ready), "containerStatuses": self._containers(pod, ready)})
        code = running.wait()
        self._record(pod, running, ended=True)
        if self.stopping.is_set() or pod.metadata.name in self.deleting:  # _stop reports it
            return
        terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error", "finishedAt": now()}
        self._status(pod, {"phase": "Succeeded" if code == 0 else "Failed", **self._conditions(False),
                           "containerStatuses": self._containers(pod, False, terminated)})  # fmt: skip

    def _stop(self, pod: Any, running: Pod, grace: float) -> None:
        """The API server is deleting the pod: its containers stop within the grace period, then the
        kubelet's final delete (grace 0) lets it go once its finalizers are done."""
        code = running.terminate(grace)
        terminated = {"exitCode": code, "reason": "Error" if code else "Completed", "finishedAt": now()}
        with contextlib.suppress(client.ApiException):
            self._status(pod, {"phase": "Failed" if code else "Succeeded", **self._conditions(False),
                               "containerStatuses": self._containers(pod, False, terminated)})  # fmt: skip
            self.core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)

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
        with contextlib.suppress(client.ApiException):  # gone meanwhile
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
                for event in events(self.core.list_namespaced_config_map, namespace):
                    config_map, loaded = event["object"], self.kubelet.objects
                    known = loaded and ("ConfigMap", config_map.metadata.name) in self.kubelet.volumes.objects
                    if known and event["type"] == "MODIFIED":
                        self.kubelet.update("ConfigMap", config_map.metadata.name, config_map.data or {})

    def close(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=WATCH_SECONDS + 5)
        with contextlib.suppress(client.ApiException):
            self.core.delete_node(self.name)
        self.streaming.kill()
        self.streaming.wait()
        with contextlib.suppress(subprocess.SubprocessError):
            self.kubelet.close()  # its pods, its network, and the relay
