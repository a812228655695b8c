"""A stack of this project under the real Pulumi engine whose pods run on the real node (real
containers, tests/engines/node.py): the config's own, in a namespace of the test's own, with nothing
that picks a node (the test kubelet's Nodes are tainted for their own tests' pods)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.stream import stream

from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.paths import LOCAL_URI
from flux_minicluster.config.spec import BROKER_CONTAINER, MiniClusterSpec
from tests.engines.control_plane import ControlPlane
from tests.realengine.pulumi_stack import Stack, StackOnNode


class StackOnRealNode(StackOnNode):
    """What StackOnNode tells of its MiniCluster (its Job, pods, readiness, what is left), for a stack
    whose pods the real kubelet runs."""

    def __init__(
        self, admin: client.ApiClient, plane: ControlPlane, namespace: str, tmp: Path, name: str,
        config: dict[str, Any], project: Path | None = None,
    ) -> None:  # fmt: skip
        """`project`: another project's folder (an example in another language) whose program declares
        the MiniCluster `name` with the properties `config`; its stack is `dev`, with no config."""
        config = {**config, "namespace": namespace}
        self.spec: MiniClusterSpec = load_spec({f"minicluster:{key}": value for key, value in config.items()}, name)
        self.namespace, self.admin = namespace, admin
        if project is None:
            self.stack = Stack(plane, tmp / "stack", name, config)
        else:
            self.stack = Stack(plane, tmp / "stack", "dev", {}, project=project)

    @property
    def name(self) -> str:
        return self.spec.name

    def pod_name(self, rank: int) -> str:
        """The name of rank `rank`'s pod (the Job controller's: the hostname is `<name>-<rank>`)."""
        index = "batch.kubernetes.io/job-completion-index"
        return str(next(p.metadata.name for p in self.pods() if p.metadata.labels[index] == str(rank)))

    def log(self, rank: int, container: str = BROKER_CONTAINER) -> str:
        """What the container of rank `rank`'s pod wrote, as the kubelet keeps it (pods/log)."""
        core = client.CoreV1Api(self.admin)
        return str(core.read_namespaced_pod_log(self.pod_name(rank), self.namespace, container=container))

    def exec(self, rank: int, *argv: str) -> str:
        """ARGV in rank `rank`'s Flux container, through the API server's exec API and the real kubelet."""
        return pod_exec(client.CoreV1Api(self.admin), self.namespace, self.pod_name(rank), *argv)

    def flux(self, rank: int, *argv: str) -> str:
        """`flux ARGV` in rank `rank`'s Flux container, against its broker."""
        return self.exec(rank, *flux_command(*argv))

    def close(self) -> None:
        """Nothing of the test's own to stop: the namespace's deletion takes what a failed test left."""


def pod_exec(core: client.CoreV1Api, namespace: str, pod: str, *argv: str) -> str:
    """ARGV in the Flux container of `pod`, through the API server's exec API: what it printed."""
    said: str = stream(
        core.connect_get_namespaced_pod_exec, pod, namespace, container=BROKER_CONTAINER, command=list(argv),
        stderr=True, stdout=True, stdin=False, tty=False,
    )  # fmt: skip
    return said


def flux_command(*argv: str) -> list[str]:
    """`flux ARGV` against the broker of the container it runs in (its local socket)."""
    return ["env", f"FLUX_URI={LOCAL_URI}", "flux", *argv]
