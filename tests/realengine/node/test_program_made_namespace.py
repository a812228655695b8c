"""A program that makes the namespace its MiniCluster goes in (a Namespace resource whose name the
component takes), run as a user runs it: `pulumi up` with its preview, on the real node. The preview
cannot judge anything in a namespace that does not exist yet; it refused the MiniCluster before ("namespace
... does not exist"), so such a program could not be deployed at all. Now the preview leaves the check to
`pulumi up`, which runs it once the namespace is there, and the Job completes in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.engines.control_plane import ControlPlane
from tests.realengine.conftest import required
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.pulumi_stack import Stack, example_program, example_properties, missing

LEFT_TO_UP = "admission check left to `pulumi up`: namespace"


@pytest.fixture
def made_namespace(admin: client.ApiClient, namespace: str) -> Any:
    """The name of the namespace the program makes; deleted after the test, whatever it left."""
    made = f"{namespace}-made"
    yield made
    try:
        client.CoreV1Api(admin).delete_namespace(made)
    except client.ApiException as error:
        assert error.status == 404, error


def test_a_program_that_makes_the_namespace_previews_and_runs_its_job_there(
    admin: client.ApiClient, control_plane: ControlPlane, made_namespace: str, tmp_path: Path, real_node: NodeInfo
) -> None:
    required(missing())
    program = yaml.safe_load(example_program("yaml", "hello", example_properties("yaml", "hello")))
    program["resources"]["namespace"] = {
        "type": "kubernetes:core/v1:Namespace", "properties": {"metadata": {"name": made_namespace}},
    }  # fmt: skip
    program["resources"]["hello"]["properties"]["namespace"] = "${namespace.metadata.name}"
    stack = Stack(control_plane, tmp_path / "stack", "dev", {}, program=yaml.safe_dump(program))
    previewed = stack.pulumi("preview")
    assert LEFT_TO_UP in previewed.stdout + previewed.stderr
    done = stack.pulumi("up", "--yes")  # with its preview, as a user runs it
    assert LEFT_TO_UP not in done.stdout.split("Updating", 1)[-1]  # the update's own check found the namespace
    job: Any = client.BatchV1Api(admin).read_namespaced_job("hello", made_namespace)
    assert "Complete" in [c.type for c in job.status.conditions if c.status == "True"]
    stack.destroy()
    with pytest.raises(client.ApiException) as gone:
        client.BatchV1Api(admin).read_namespaced_job("hello", made_namespace)
    assert gone.value.status == 404
