"""The cluster the Kubernetes provider is given (kube.Access: its `context` and `kubeconfig`) is the
one the MiniCluster's own requests go to: a kubeconfig's path or its text, as the provider takes
either, in place of KUBECONFIG."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from flux_minicluster.cluster import admission, kube
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.harness import OWNER
from tests.kube_api import Cluster
from tests.kube_api.samples import node

TOO_SMALL = [node("node-0", pods="1")]
"""One node with room for one pod: a MiniCluster of 4 pods does not fit it, which only a check that
reads this cluster can say."""


def checked(access: Access) -> admission.Verdict:
    spec = load_spec({f"minicluster:{k}": v for k, v in config(admission="refuse").items()}, "dev")
    return admission.check(spec, access, OWNER)


@pytest.fixture
def elsewhere(kube_api: Cluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cluster:
    """The stand-in, with KUBECONFIG pointing at no kubeconfig at all."""
    kube_api.nodes = TOO_SMALL
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    return kube_api


def test_without_a_kubeconfig_the_check_is_skipped(elsewhere: Cluster) -> None:
    found = checked(Access())
    assert found.refused is None
    assert [w.split(":")[0] for w in found.warnings] == ["admission check skipped"]


def test_a_kubeconfig_path_given_is_the_cluster_checked(elsewhere: Cluster) -> None:
    found = checked(Access(kubeconfig=str(elsewhere.kubeconfig)))
    assert found.refused is not None and "size 4 needs room for 4 pods" in found.refused


def test_a_kubeconfig_text_given_is_the_cluster_checked(elsewhere: Cluster) -> None:
    found = checked(Access(kubeconfig=elsewhere.kubeconfig.read_text()))
    assert found.refused is not None and "size 4 needs room for 4 pods" in found.refused


def test_a_kubeconfig_as_one_line_of_json_is_read_as_text(elsewhere: Cluster) -> None:
    # As a YAML program's config hands it on (tests/realengine/test_given_kubeconfig.py): one line, which
    # reads as a path too, whose first part was too long for a file name (it raised, quoting the text).
    document = {"preferences": {"note": "x" * 300}, **yaml.safe_load(elsewhere.kubeconfig.read_text())}
    found = checked(Access(kubeconfig=json.dumps(document)))
    assert found.refused is not None and "size 4 needs room for 4 pods" in found.refused


def test_a_context_missing_from_the_given_kubeconfig_names_the_ones_there_are(elsewhere: Cluster) -> None:
    with pytest.raises(kube.NoCluster) as raised:
        Access(context="nope", kubeconfig=elsewhere.kubeconfig.read_text()).client()
    assert str(raised.value) == (
        "kubeconfig context 'nope' does not exist in the kubeconfig given to the Kubernetes provider; "
        "its contexts: standin"
    )


@pytest.mark.parametrize(
    "given",
    ["apiVersion: v1\nusers: [{name: me, user: {token: s3cret}}", "/no/such/file", '{"token": "s3cret"' + "x" * 300],
    ids=["broken-yaml", "no-file", "one-long-line"],
)
def test_a_kubeconfig_that_is_neither_a_file_nor_yaml_is_said_so_without_its_text(given: str) -> None:
    with pytest.raises(kube.NoCluster) as raised:
        Access(kubeconfig=given).client()
    assert "s3cret" not in str(raised.value)
    assert str(raised.value) == (
        "the kubeconfig given to the Kubernetes provider is neither a file that exists nor a kubeconfig's YAML text"
    )
