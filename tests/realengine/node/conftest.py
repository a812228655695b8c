"""The real node's tier: pods in real containers (containerd, runc, the kubelet: tests/engines/node.py)
on the real control plane. `.ci/run` starts the node for the run (MC_NODE); elsewhere these tests skip
with the command that starts one, and in CI that is a failure."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.engines.control_plane import ControlPlane
from tests.engines.node import NODE_STATE, missing
from tests.realengine.conftest import required
from tests.realengine.node.stacks import StackOnRealNode


@dataclass(frozen=True)
class NodeInfo:
    name: str
    address: str


@pytest.fixture(scope="session")
def real_node() -> NodeInfo:
    """The real node `.ci/run` started: one per machine, as its kubelet and containerd write fixed paths."""
    running = os.environ.get("MC_NODE")
    if not running:
        required(
            missing()
            or "no real node (MC_NODE): .ci/run starts one (python3 tests/engines/node.py DIR CONTROL_PLANE_DIR)"
        )
    state = json.loads((Path(str(running)) / NODE_STATE).read_text())
    return NodeInfo(state["name"], state["address"])


def stack_maker(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, folder: Path
) -> Callable[..., StackOnRealNode]:
    """Makes a stack of this project under the real Pulumi engine, in `namespace`, its pods on the real
    node."""
    from tests.realengine.pulumi_stack import missing

    required(missing())

    def make(name: str, **config: Any) -> StackOnRealNode:
        return StackOnRealNode(admin, control_plane, namespace, folder / name, name, config)

    return make


@pytest.fixture
def stack_on_real_node(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path, real_node: NodeInfo
) -> Callable[..., StackOnRealNode]:
    """A stack of the test's own, in its namespace."""
    return stack_maker(admin, control_plane, namespace, tmp_path)


@pytest.fixture(scope="module")
def module_stack_on_real_node(
    admin: client.ApiClient, control_plane: ControlPlane, module_namespace: str, real_node: NodeInfo,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., StackOnRealNode]:  # fmt: skip
    """A stack that the module's tests share, in the module's namespace: for checks that change nothing
    (each `pulumi up` costs seconds). A test that changes its MiniCluster makes its own."""
    return stack_maker(admin, control_plane, module_namespace, tmp_path_factory.mktemp("shared"))
