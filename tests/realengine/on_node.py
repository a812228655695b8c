"""A MiniCluster on the real control plane: its objects as render.py makes them (the Secrets and
ConfigMaps named as pulumi-kubernetes names them) created in a namespace of the test's own, and the
Job's pods on real Flux on this machine (the test kubelet as a Node, tests/kubelet/node.py), made by
the real Job controller and bound by the real scheduler."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client

from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.engines.control_plane import ControlPlane
from tests.kubelet.node import Node, selecting
from tests.kubelet.pod import Pod
from tests.kubelet.pods import Kubelet
from tests.realengine.conftest import create


class NodeCluster:
    """A MiniCluster whose pods run on this test's Node: what the API server and its pods say of it."""

    kubelet: Kubelet
    node: Node
    namespace: str
    admin: client.ApiClient

    @property
    def name(self) -> str:
        return self.kubelet.spec.name

    def job(self) -> Any:
        return client.BatchV1Api(self.admin).read_namespaced_job(self.name, self.namespace)

    @property
    def size(self) -> int:
        spec = self.job().spec
        assert spec is not None and spec.completions is not None
        return int(spec.completions)

    def pods(self) -> list[Any]:
        core = client.CoreV1Api(self.admin)
        return list(core.list_namespaced_pod(self.namespace, label_selector=f"job-name={self.name}").items)

    def running(self, ranks: int) -> bool:
        """Whether the API server holds exactly `ranks` pods of the Job, each Ready (the kubelet says so)."""
        pods = [pod for pod in self.pods() if pod.metadata.deletion_timestamp is None]
        return len(pods) == ranks and all(ready(pod) for pod in pods)

    def events(self, reason: str) -> list[str]:
        about = f"involvedObject.name={self.name},reason={reason}"
        found = client.CoreV1Api(self.admin).list_namespaced_event(self.namespace, field_selector=about).items
        return [str(event.message) for event in found]

    def condition(self, kind: str) -> str | None:
        """The Job's condition `kind` (Complete, Failed, SuccessCriteriaMet...) as the Job controller set it."""
        status = self.job().status
        found = [c.status for c in (status.conditions or []) if c.type == kind] if status else []
        return found[0] if found else None

    @property
    def rank0(self) -> Pod:
        return self.kubelet.pod(0)

    def close(self) -> None:
        self.node.close()


class OnNode(NodeCluster):
    """The base config with `overrides`, as stack `dev`, in `namespace`, created as render.py makes it."""

    def __init__(
        self, admin: client.ApiClient, plane: ControlPlane, namespace: str, tmp: Path, **overrides: Any
    ) -> None:
        raw = config(**overrides, namespace=namespace, pod=selecting(namespace))
        spec = load_spec({f"minicluster:{key}": value for key, value in raw.items()}, "dev")
        self.kubelet = Kubelet(tmp / "cluster", spec)
        self.namespace, self.admin = namespace, admin
        self.node = Node(self.kubelet, plane, admin, label=namespace)
        for obj in self.kubelet.objects:
            create(admin, obj)


def ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
