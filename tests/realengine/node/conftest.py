"""The real node's tier: pods in real containers (containerd, runc, the kubelet: tests/engines/node.py)
on the real control plane. `.ci/run` starts the node for the run (MC_NODE); elsewhere these tests skip
with the command that starts one, and in CI that is a failure."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.engines.node import NODE_STATE, missing
from tests.realengine.conftest import required


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
