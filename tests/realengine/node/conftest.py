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


@pytest.fixture
def stack_on_real_node(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path, real_node: NodeInfo
) -> Callable[..., StackOnRealNode]:
    """Makes a stack of this project under the real Pulumi engine, in this test's namespace, its pods on
    the real node."""
    from tests.realengine.pulumi_stack import missing

    required(missing())

    def make(name: str, **config: Any) -> StackOnRealNode:
        return StackOnRealNode(admin, control_plane, namespace, tmp_path / name, name, config)

    return make
