"""The real-engine tier: tests against a real Kubernetes control plane (tests/engines/control_plane.py),
marked realengine. Where the engines are not built, each test is skipped with the command that builds
them, except in CI, where that is a failure."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.engines.control_plane import ControlPlane, missing


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/realengine/" in str(item.fspath):
            item.add_marker(pytest.mark.realengine)


def required(why: str | None) -> None:
    """An engine this test needs is missing (`why`): a skip with the command that builds it; in CI,
    which runs every real-engine test, a failure."""
    if why is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI runs every real-engine test: {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The control plane `.ci/run` started (MC_CONTROL_PLANE), else one of this session's own (each pytest
    worker's), stopped at its end."""
    running = os.environ.get("MC_CONTROL_PLANE")
    if running:  # started by .ci/run for the whole run
        yield ControlPlane.attach(Path(running))
        return
    required(missing())
    plane = ControlPlane(tmp_path_factory.mktemp("control-plane"))
    yield plane
    plane.stop()


@pytest.fixture
def test_kubelet() -> None:
    """The test kubelet runs the pods of a test's Node in namespaces of this machine, in an image with
    Flux (tests/kubelet/image.py: flux-core where it is installed, else the stand-in): it needs root."""
    required("the test kubelet needs root (network, mount and PID namespaces)" if os.geteuid() != 0 else None)


@pytest.fixture(scope="session")
def admin(control_plane: ControlPlane) -> client.ApiClient:
    """The tests' own client, as the cluster's admin (system:masters): one a worker, as no test changes it."""
    api: client.ApiClient = config.new_client_from_config(str(control_plane.kubeconfig))  # type: ignore[no-untyped-call]
    # Its token never expires. The client's refresh hook sets the kubeconfig's settings again at every
    # request, the proxies from os.environ among them, and a test kubelet's thread once did so while
    # pytest changed PYTEST_CURRENT_TEST: a KeyError, and a pod status patch lost (a warning in CI).
    api.configuration.refresh_api_key_hook = None
    return api


def own_namespace(admin: client.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the requester's own (a test's, or a module's), deleted after it; with the marker
    `namespace_labels`, with those labels (Pod Security's enforce level, say)."""
    name = f"t-{secrets.token_hex(4)}"
    marker = request.node.get_closest_marker("namespace_labels")
    labels = marker.args[0] if marker else None
    core = client.CoreV1Api(admin)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels)))
    yield name
    core.delete_namespace(name)


@pytest.fixture
def namespace(admin: client.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own."""
    yield from own_namespace(admin, request)


@pytest.fixture(scope="module")
def module_namespace(admin: client.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the module's own, for one MiniCluster that the module's read-only checks share."""
    yield from own_namespace(admin, request)


def create(api: client.ApiClient, obj: dict[str, Any]) -> Any:
    """Any object, as kubectl create would send it."""
    from kubernetes import utils

    return utils.create_from_dict(api, obj)  # type: ignore[no-untyped-call]


@pytest.fixture
def minicluster_ops(control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], Any]:
    """The `minicluster` command's view of a cluster of this test (on_node.NodeCluster), its client made
    as the command makes it, from KUBECONFIG: the control plane's admin."""
    from flux_minicluster.cluster import kube
    from flux_minicluster.ops import cli

    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    return lambda cluster: cli.Cluster(kube.api_client(None), cluster.kubelet.spec)


@pytest.fixture
def on_node(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path, test_kubelet: None
) -> Iterator[Callable[..., Any]]:
    """Makes the base config's MiniCluster with overrides on the control plane, its pods on this test's
    Node (on_node.py); closed after the test, whatever its outcome."""
    from tests.realengine.on_node import OnNode

    made: list[OnNode] = []

    def make(**overrides: Any) -> OnNode:
        made.append(OnNode(admin, control_plane, namespace, tmp_path, **overrides))
        return made[-1]

    try:
        yield make
    finally:
        for cluster in made:
            cluster.close()


@pytest.fixture
def stack_on_node(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path, test_kubelet: None
) -> Iterator[Callable[..., Any]]:
    """Makes a stack of this project under the real Pulumi engine (pulumi_stack.py), in this test's
    namespace, its pods on this test's Node; the Node closed after the test, whatever its
    outcome (the namespace's deletion takes whatever a failed test left)."""
    from tests.realengine.pulumi_stack import StackOnNode, missing

    required(missing())
    made: list[StackOnNode] = []

    def make(name: str, pinned: bool = False, example: str | None = None, **config: Any) -> StackOnNode:
        made.append(StackOnNode(admin, control_plane, namespace, tmp_path / name, name, config, pinned, example))
        return made[-1]

    try:
        yield make
    finally:
        for stack in made:
            stack.close()
