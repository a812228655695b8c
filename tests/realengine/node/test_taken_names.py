"""Two stacks that name their MiniCluster alike in one namespace, on the real engines. pulumi-kubernetes
4.25 creates by server-side apply: the second stack's `pulumi up` took the first's Service over (same
fields, no conflict), failed on its Job (the field managers' conflict), after its scheduling guard had
waited 2 minutes, and the second's `pulumi destroy` would have deleted the first's Service. The dry run
now refuses the names another stack holds, before anything is created (tests/cluster/test_taken_names.py
for each kind of holder)."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client

from tests.engines.control_plane import ControlPlane
from tests.harness import example
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.node.stacks import StackOnRealNode
from tests.realengine.pulumi_stack import left_in

SHARED = {**example("interactive"), "size": 2, "name": "shared"}


def test_a_second_stack_of_the_same_name_is_refused_and_the_first_keeps_its_objects(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path, real_node: NodeInfo
) -> None:
    def stack(name: str) -> StackOnRealNode:
        return StackOnRealNode(admin, control_plane, namespace, tmp_path / name, name, SHARED)

    first = stack("first")
    first.stack.up()
    before = left_in(admin, namespace)
    second = stack("second")
    refused = second.stack.up(check=False)
    assert refused.returncode != 0
    holder = "(minicluster:name), made by Pulumi stack 'organization/minicluster/first'"
    assert f"  - the Service 'shared' {holder}\n" in refused.stdout
    assert f"  - the Job 'shared' {holder}\n" in refused.stdout
    assert "Nothing was created." in refused.stdout
    assert left_in(admin, namespace) == before  # not even the second's keygen pod or ConfigMaps
    assert not [kind for kind in second.stack.resource_types() if kind.startswith("kubernetes:")]
    second.stack.destroy()
    assert left_in(admin, namespace) == before
    upped = first.stack.up().stdout  # its own objects are its own to update: nothing to do
    assert "updated" not in upped and "replaced" not in upped, upped


def test_after_pulumi_stack_rename_the_refusal_says_how_to_take_the_objects_back(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path, real_node: NodeInfo
) -> None:
    """With minicluster:name set (else the name follows the stack's, and a rename makes a new MiniCluster):
    the objects name the old stack, which the program cannot tell from another stack of the project."""
    cluster = StackOnRealNode(admin, control_plane, namespace, tmp_path / "first", "first", SHARED)
    cluster.stack.up()
    job = cluster.job().metadata.uid
    cluster.stack.pulumi("stack", "rename", "second")  # its stack file too
    cluster.stack.name = "second"
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    assert (
        "If this stack was renamed from 'first' (`pulumi stack rename`), they are its own: one `pulumi up` with "
        "minicluster:admission off marks them as this stack's (then set it back)."
    ) in refused.stdout
    cluster.stack.configure({**cluster.stack.config, "admission": "off"})
    cluster.stack.up()
    cluster.stack.configure({**cluster.stack.config, "admission": "refuse"})
    again = cluster.stack.up().stdout
    assert "renamed" not in again and cluster.job().metadata.uid == job  # the same Job all along
