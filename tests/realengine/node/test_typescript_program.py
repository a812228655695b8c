"""examples/typescript run for real: the Node.js language host (versions.py) runs the program with the
SDK a TypeScript program gets from `pulumi package add` (generated_sdk.py), against the component
package's plugin; `pulumi up` until the Job completes on the real node, the outputs (one computed in
TypeScript) read back, `pulumi destroy` leaving nothing. A refused property reaches the user with
nothing created, and a persistent MiniCluster declared in TypeScript resizes in place on a second
`pulumi up` (the package's Scale resource, under the real engine)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.engines.control_plane import ControlPlane
from tests.engines.versions import PULUMI_BIN, not_built
from tests.harness import ROOT
from tests.kubelet.pod import wait_until
from tests.realengine.conftest import required
from tests.realengine.generated_sdk import typescript_example
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.node.stacks import StackOnRealNode
from tests.realengine.pulumi_stack import missing

EXAMPLE = ROOT / "examples" / "typescript"
PROPERTIES = {"image": "ghcr.io/flux-framework/flux-restful-api:latest", "size": 4, "tasks": 4, "command": "hostname"}
"""The example's MiniCluster, as index.ts declares it."""


@pytest.fixture
def typescript(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path, real_node: NodeInfo,
) -> Callable[..., StackOnRealNode]:  # fmt: skip
    """The example's stack `dev` in a folder of the test's own, with its SDK and packages (generated_sdk.py:
    node_modules shared), its program's MiniCluster in the test's namespace, with `changes` to its
    properties (None: left out); the package's plugin where it is."""
    required(missing() or not_built("the Node.js language host", [PULUMI_BIN / "pulumi-language-nodejs"]))
    project = typescript_example(tmp_path / "project")

    def make(**changes: Any) -> StackOnRealNode:
        properties = {key: value for key, value in {**PROPERTIES, **changes}.items() if value is not None}
        program(project, properties, namespace)
        cluster = StackOnRealNode(admin, control_plane, namespace, tmp_path, "hello", properties, project=project)
        # The Node.js host type-checks a TypeScript program at each run, 2 to 3 s of CPU here: the
        # example's types are test_typescript_example.py's to check (tsc), these tests are its run.
        cluster.stack.env["PULUMI_NODEJS_TRANSPILE_ONLY"] = "true"
        return cluster

    return make


def program(project: Path, properties: dict[str, Any], namespace: str) -> None:
    """index.ts with the MiniCluster's properties as given, the rest of the program as the example has it."""
    text = (EXAMPLE / "index.ts").read_text()
    start, end = text.index('new minicluster.MiniCluster("hello", {'), text.index("});")
    given = {key: value for key, value in {**properties, "namespace": namespace}.items() if value is not None}
    args = ",\n".join(f"    {key}: {json.dumps(value)}" for key, value in given.items())
    (project / "index.ts").write_text(f'{text[:start]}new minicluster.MiniCluster("hello", {{\n{args},\n{text[end:]}')


def test_pulumi_up_of_the_typescript_program_runs_the_job_and_its_outputs_read_back(
    typescript: Callable[..., StackOnRealNode],
) -> None:
    cluster = typescript()
    cluster.stack.up()
    assert cluster.condition("Complete") == "True"
    assert sorted(pod.status.phase for pod in cluster.pods()) == ["Succeeded"] * 4
    outputs = cluster.stack.outputs()
    assert outputs["jobName"] == "hello"
    assert outputs["followRank0"].startswith(f"run: kubectl logs -f -n {cluster.namespace} -c flux-broker ")
    cluster.stack.destroy()
    assert cluster.left() == {}
    assert cluster.stack.resource_types() == []


def test_a_refused_property_reaches_the_typescript_user_and_nothing_is_created(
    typescript: Callable[..., StackOnRealNode],
) -> None:
    cluster = typescript(size=1)
    program(cluster.stack.project, {**PROPERTIES, "size": 0}, cluster.namespace)
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    assert "size: Input should be greater than or equal to 1 (got 0)" in refused.stdout + refused.stderr
    assert cluster.left() == {}


def test_a_new_size_in_the_typescript_program_resizes_the_running_job_in_place(
    typescript: Callable[..., StackOnRealNode],
) -> None:
    cluster = typescript(command=None, tasks=None, size=2, maxSize=4)
    cluster.stack.up()
    wait_until(lambda: cluster.running(2), "two ready brokers", 60, poll=0.2)
    before = cluster.job().metadata.uid
    program(
        cluster.stack.project,
        {**PROPERTIES, "command": None, "tasks": None, "size": 3, "maxSize": 4},
        cluster.namespace,
    )
    cluster.stack.up()
    assert cluster.job().metadata.uid == before and cluster.size == 3
    wait_until(lambda: cluster.running(3), "the third broker", 60, poll=0.2)
    cluster.stack.destroy()
    assert cluster.left() == {}
