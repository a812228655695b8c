"""examples/go run for real: the Go language host (versions.py) builds and runs the program with the SDK
a Go program gets from `pulumi package add` (generated_sdk.py), against the component package's plugin;
`pulumi up` until the Job completes on the real node, the outputs (one computed in Go) read back,
`pulumi destroy` leaving nothing; a refused property (a size of 0, a mode outside the enum, which Go
compiles) reaches the user with nothing created."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.engines.control_plane import ControlPlane
from tests.engines.versions import GO_TEST_BUILD, PULUMI_BIN, not_built
from tests.harness import ROOT
from tests.realengine.conftest import required
from tests.realengine.generated_sdk import example_with_sdk, run
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.node.stacks import StackOnRealNode
from tests.realengine.pulumi_stack import missing

EXAMPLE = ROOT / "examples" / "go"
PROPERTIES = {"image": "ghcr.io/flux-framework/flux-restful-api:latest", "size": 4, "tasks": 4, "command": "hostname"}
"""The example's MiniCluster, as main.go declares it."""
ENV = {**os.environ, **GO_TEST_BUILD}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with its SDK, its modules resolved, and the package's plugin where it is."""
    required(missing() or not_built("the Go language host", [PULUMI_BIN / "pulumi-language-go"]))
    folder = example_with_sdk("go", "go", tmp_path_factory.mktemp("go"))
    run(["go", "mod", "tidy"], folder, env=ENV)
    return folder


@pytest.fixture
def go_program(
    built: Path, admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path,
    real_node: NodeInfo,
) -> Callable[..., StackOnRealNode]:  # fmt: skip
    """The example's stack `dev` in a folder of the test's own, its MiniCluster in the test's namespace,
    with the size `size`."""

    def make(size: int = 4, field: str = "") -> StackOnRealNode:
        """`field`: one more line of MiniClusterArgs, as Go source."""
        project = tmp_path / "project"
        shutil.copytree(built, project, dirs_exist_ok=True)
        text = (
            (EXAMPLE / "main.go")
            .read_text()
            .replace("pulumi.Int(4),\n\t\t\tTasks", f"pulumi.Int({size}),\n\t\t\tTasks")
        )
        text = text.replace(
            'Command: pulumi.String("hostname"),',
            f'Command: pulumi.String("hostname"),\n\t\t\tNamespace: pulumi.String("{namespace}"),\n\t\t\t{field}',
        )
        (project / "main.go").write_text(text)
        properties: dict[str, Any] = {**PROPERTIES, "size": max(size, 1)}
        cluster = StackOnRealNode(admin, control_plane, namespace, tmp_path, "hello", properties, project=project)
        cluster.stack.env.update(GO_TEST_BUILD)  # the Go host builds the program as the tests do
        return cluster

    return make


def test_pulumi_up_of_the_go_program_runs_the_job_and_its_outputs_read_back(
    go_program: Callable[..., StackOnRealNode],
) -> None:
    cluster = go_program()
    cluster.stack.up()
    assert cluster.condition("Complete") == "True"
    assert sorted(pod.status.phase for pod in cluster.pods()) == ["Succeeded"] * 4
    outputs = cluster.stack.outputs()
    assert outputs["jobName"] == "hello"
    assert re.match(rf"run: kubectl logs -f -n {cluster.namespace} -c flux-broker ", outputs["followRank0"])
    cluster.stack.destroy()
    assert cluster.left() == {}
    assert cluster.stack.resource_types() == []


def test_a_refused_property_reaches_the_go_user_and_nothing_is_created(
    go_program: Callable[..., StackOnRealNode],
) -> None:
    cluster = go_program(size=0)
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    assert "size: Input should be greater than or equal to 1 (got 0)" in refused.stdout + refused.stderr
    assert cluster.left() == {}


def test_a_mode_outside_the_enum_compiles_in_go_and_is_refused_with_nothing_created(
    go_program: Callable[..., StackOnRealNode],
) -> None:
    """Go's enums are strings with names: minicluster.Mode("sumbit") compiles, and the package refuses it."""
    cluster = go_program(field='Mode: minicluster.Mode("sumbit"),')
    refused = cluster.stack.up(check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert "mode: Input should be 'submit', 'launcher', 'batch' or 'interactive' (got sumbit)" in said
    assert cluster.left() == {}
