"""A kubeconfig whose user's credentials come from a plugin (`exec`), as the clouds' do: the `kubernetes`
client runs it as it loads the kubeconfig, and only logs a failure, going on without credentials (every
request then refused as `system:anonymous`). Such a failure is the error, in the plugin's own words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from flux_minicluster.cluster import kube
from flux_minicluster.cluster.kube import Access
from flux_minicluster.ops import cli
from tests.kube_api import Cluster


def with_credential_plugin(kubeconfig: Path, tmp_path: Path, script: str | None) -> Path:
    """A copy of `kubeconfig` whose user's credentials come from a plugin running the shell `script`
    (None: a plugin that is not installed), as the clouds' kubeconfigs get theirs."""
    plugin = tmp_path / "credential-plugin"
    if script is not None:
        plugin.write_text(f"#!/bin/sh\n{script}\n")
        plugin.chmod(0o755)
    loaded = yaml.safe_load(kubeconfig.read_text())
    loaded["users"][0]["user"] = {
        "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(loaded))
    return path


def with_plugin(api: Cluster, tmp_path: Path, script: str | None) -> Path:
    return with_credential_plugin(api.kubeconfig, tmp_path, script)


def test_a_plugin_that_fails_is_the_error_in_its_own_words(
    kube_api: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = with_plugin(kube_api, tmp_path, "echo 'not logged in:' >&2; echo '  run cloud-login' >&2; exit 1")
    with pytest.raises(kube.CredentialsFailed) as raised:
        Access(kubeconfig=str(kubeconfig)).client()
    assert str(raised.value) == (
        f"the credential plugin of the kubeconfig {kubeconfig} (its user's `exec`) gave no credentials: exec: "
        "process returned 1. not logged in: run cloud-login. Run `kubectl get namespaces` with the same kubeconfig "
        "and context to see it fail, then log in again"
    )
    assert capsys.readouterr().err == ""  # not also a bare `ERROR:root:` line


def test_a_plugin_that_is_not_installed_is_named(kube_api: Cluster, tmp_path: Path) -> None:
    with pytest.raises(kube.CredentialsFailed) as raised:
        Access(kubeconfig=str(with_plugin(kube_api, tmp_path, None))).client()
    assert f"No such file or directory: '{tmp_path / 'credential-plugin'}'" in str(raised.value)


def test_a_plugin_whose_tokens_come_and_go_is_a_client(kube_api: Cluster, tmp_path: Path) -> None:
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": "from-the-plugin"}}  # fmt: skip
    client: Any = Access(kubeconfig=str(with_plugin(kube_api, tmp_path, f"echo '{json.dumps(credential)}'"))).client()
    assert client.configuration.api_key["BearerToken"] == "Bearer from-the-plugin"


def test_the_ops_tool_says_it_in_one_line_and_exits_2(
    kube_api: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(with_plugin(kube_api, tmp_path, "echo 'token expired' >&2; exit 1")))
    assert cli.main(["status", "--stack", "dev"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the credential plugin of the kubeconfig ") and "token expired" in err
    assert err.count("\n") == 1
