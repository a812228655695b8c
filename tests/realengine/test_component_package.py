"""The component package under the real Pulumi engine, from a Pulumi YAML program (examples/yaml, the
dev stack's MiniCluster): `pulumi package add` reads the package's schema from its plugin; `pulumi up`
declares the MiniCluster through the plugin's Construct and returns once the real Job controller marks
the Job complete; `pulumi destroy` leaves nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from flux_minicluster.config.outputs import COMPONENT
from flux_minicluster.provider.schema import package_schema, version
from tests.conftest import config
from tests.harness import ROOT, refused_problems
from tests.realengine.pulumi_stack import StackOnNode, example_properties

PLUGIN = ROOT / "package" / "bin" / "pulumi-resource-minicluster"
LINK_MISSING = "linking package: method Link not implemented"
"""Where `pulumi package add` stops in a YAML project with the YAML language host of versions.py, which
predates the Link call of today's CLI: after it made the SDK (for YAML, the schema) from the plugin."""


@pytest.fixture
def hello(stack_on_node: Callable[..., StackOnNode]) -> StackOnNode:
    return stack_on_node("hello", example="yaml", **example_properties("yaml", "hello"))


def test_pulumi_package_add_records_the_package_its_plugin_names(hello: StackOnNode) -> None:
    added = hello.stack.pulumi("package", "add", str(PLUGIN), stack=False, check=False)
    assert added.returncode == 0 or LINK_MISSING in added.stderr, added.stdout + added.stderr
    declared = yaml.safe_load(
        (hello.stack.project / "sdks" / "minicluster" / f"minicluster-{version()}.yaml").read_text()
    )
    assert (declared["name"], declared["version"]) == ("minicluster", version())


def test_the_cli_reads_the_schema_the_plugin_serves(hello: StackOnNode) -> None:
    served = json.loads(hello.stack.pulumi("package", "get-schema", str(PLUGIN), stack=False).stdout)
    assert served["resources"][COMPONENT] == package_schema()["resources"][COMPONENT]
    assert served["types"] == package_schema()["types"]


def test_pulumi_up_of_the_yaml_program_returns_once_its_job_completed(hello: StackOnNode) -> None:
    hello.stack.up()
    assert hello.condition("Complete") == "True"
    assert sorted(pod.status.phase for pod in hello.pods()) == ["Succeeded"] * 4
    outputs = hello.stack.outputs()
    assert outputs["jobName"] == hello.job().metadata.name == "hello"
    assert "minicluster:index:CurveCertificate" in hello.stack.resource_types()  # the keygen pod's, served here


@pytest.mark.realflux
def test_the_yaml_programs_command_ran_on_every_broker(hello: StackOnNode) -> None:
    hello.stack.up()
    hostnames = [line for line in hello.kubelet.pod(0).log.splitlines() if line.startswith("hello-")]
    assert sorted(hostnames) == ["hello-0", "hello-1", "hello-2", "hello-3"]


def test_pulumi_destroy_of_the_yaml_program_leaves_nothing(hello: StackOnNode) -> None:
    hello.stack.up()
    hello.stack.destroy()
    assert hello.left() == {}
    assert hello.stack.resource_types() == []


def rewrite_properties(cluster: StackOnNode, **changes: Any) -> None:
    """The program's MiniCluster properties changed as a user edits them (the Node keeps its spec)."""
    file = cluster.stack.project / "Pulumi.yaml"
    program = yaml.safe_load(file.read_text())
    program["resources"]["hello"]["properties"].update(changes)
    file.write_text(yaml.safe_dump(program))


def test_an_invalid_property_is_refused_in_the_stack_files_words_and_nothing_is_created(hello: StackOnNode) -> None:
    rewrite_properties(hello, size=0)
    refused = hello.stack.up(check=False)
    assert refused.returncode != 0
    (problem,) = refused_problems(config(size=0))
    assert f"has a problem: invalid MiniCluster stack config:\n      - {problem}" in refused.stdout
    assert hello.left() == {}
    assert [kind for kind in hello.stack.resource_types() if kind.startswith(("minicluster:", "kubernetes:"))] == []


def test_a_value_outside_an_enum_is_refused_by_the_program_before_the_package_sees_it(hello: StackOnNode) -> None:
    rewrite_properties(hello, mode="sumbit")
    refused = hello.stack.up(check=False)
    assert refused.returncode != 0
    assert "mode" in refused.stdout and '"interactive"' in refused.stdout  # the schema's enum, by its key
    assert hello.left() == {}


def test_a_secret_property_stays_out_of_the_state_and_the_output(hello: StackOnNode) -> None:
    rewrite_properties(hello, environment={"API_TOKEN": {"fn::secret": "s3cret-token"}})
    done = hello.stack.up()
    assert hello.condition("Complete") == "True"
    assert "s3cret-token" not in hello.stack.state_text()
    assert "s3cret-token" not in done.stdout + done.stderr
