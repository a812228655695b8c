"""A Kubernetes provider that the program gives the component (`providers`, as for a cluster the same
program makes) is the cluster the MiniCluster's own requests go to, on mocks over the engine's gRPC
protocol (engine_peer.py): its settings are read from the provider's state, as the engine keeps it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pulumi.runtime import rpc

from tests.conftest import config
from tests.kube_api import StandIn
from tests.kube_api.samples import node
from tests.plain import is_secret, plain
from tests.provider.engine_peer import construct
from tests.provider_plugin import secret

TALKING = {f"minicluster:index:{kind}" for kind in ("CurveCertificate", "SchedulingGuard", "Scale", "JobDeletion")}
"""The package's resources whose CRUD makes requests to the cluster."""
KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- name: me\n  user: {token: s3cret}\n"


@pytest.fixture(scope="module")
def too_small(api_server: StandIn) -> Iterator[StandIn]:
    """A cluster with room for one pod, which only a check that reads it can tell."""
    api_server.cluster.nodes = [node("node-0", pods="1")]
    yield api_server


def test_the_given_providers_kubeconfig_and_context_reach_every_resource_that_talks_to_the_cluster() -> None:
    built = construct(config(command=None, admission="off"), kubernetes={"kubeconfig": secret(KUBECONFIG),
                                                                         "context": "there"})  # fmt: skip
    assert built.error is None
    talking = [r for r in built.deployment.resources if r.typ in TALKING]
    assert {r.typ for r in talking} == TALKING
    for resource in talking:
        assert is_secret(resource.inputs["kubeconfig"]), resource.typ
        assert (plain(resource.inputs["kubeconfig"]), resource.inputs["kubeContext"]) == (KUBECONFIG, "there")


def test_a_kubeconfig_that_arrives_parsed_goes_on_as_its_json_text() -> None:
    # A YAML program's config value that is JSON text (a kubeconfig written as JSON) reaches the
    # provider's state as an object: so it did on the real engine (tests/realengine/test_given_kubeconfig.py).
    given = {"apiVersion": "v1", "kind": "Config", "contexts": [{"name": "there"}]}
    built = construct(config(admission="off"), kubernetes={"kubeconfig": secret(given)})
    assert built.error is None
    keygen = built.deployment.one("minicluster:index:CurveCertificate")
    assert json.loads(plain(keygen.inputs["kubeconfig"])) == given


def test_the_admission_check_reads_the_given_providers_cluster(too_small: StandIn) -> None:
    # The plugin's own KUBECONFIG points nowhere (engine_peer.py): only the provider's leads to the cluster.
    built = construct(config(admission="refuse"), kubernetes={"kubeconfig": str(too_small.cluster.kubeconfig)})
    assert built.error is not None and "MiniCluster 'dev' does not fit the cluster as it is" in built.error
    assert [r.typ for r in built.deployment.resources] == ["pulumi:providers:kubernetes"]  # the program's own


def test_a_preview_before_the_provider_is_made_shows_the_component_alone() -> None:
    # As in a preview of a program that makes the cluster: the provider's kubeconfig comes from it.
    built = construct(config(admission="off"), preview=True, kubernetes={"kubeconfig": rpc.UNKNOWN})
    assert built.error is None
    assert built.deployment.kinds == ["minicluster:index:MiniCluster", "pulumi:providers:kubernetes"]
    assert any("the Kubernetes provider's kubeconfig not known" in message for message in built.warnings())


def test_a_provider_that_names_a_kubeconfig_cluster_is_refused_before_anything_is_declared() -> None:
    built = construct(config(admission="off"), kubernetes={"kubeconfig": KUBECONFIG, "cluster": "other"})
    assert built.error is not None
    assert "the Kubernetes provider 'cluster' names a kubeconfig cluster (`cluster`)" in built.error
    assert [r.typ for r in built.deployment.resources] == ["pulumi:providers:kubernetes"]


def test_a_provider_that_renders_yaml_is_refused_before_anything_is_declared() -> None:
    built = construct(config(admission="off"), kubernetes={"kubeconfig": KUBECONFIG, "renderYamlToDirectory": "out"})
    assert built.error is not None
    assert "renderYamlToDirectory of the Kubernetes provider 'cluster' is set (out): the Kubernetes" in built.error
    assert [r.typ for r in built.deployment.resources] == ["pulumi:providers:kubernetes"]
