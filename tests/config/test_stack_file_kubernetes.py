"""The stack file's `kubernetes:*` settings, read without Pulumi (render.py, the ops tool): another
package's encrypted key is not the MiniCluster's and does not stop the reading; the plain ones say
which cluster the stack deploys to."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flux_minicluster.config import stack_file
from flux_minicluster.config.loader import ConfigError
from flux_minicluster.ops import cli

ENCRYPTED = {"secure": "v1:c2VjcmV0:ZW5jcnlwdGVk"}  # as `pulumi config set --secret` writes it


def written(tmp_path: Path, **config: object) -> Path:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump({"config": {"minicluster:image": "flux:1", **config}}))
    return path


def test_an_encrypted_kubeconfig_is_left_out_and_the_spec_reads_all_the_same(tmp_path: Path) -> None:
    path = written(tmp_path, **{"kubernetes:kubeconfig": ENCRYPTED})
    config, encrypted = stack_file.read_config(path)
    assert "kubernetes:kubeconfig" not in config and encrypted == ["kubernetes:kubeconfig"]
    spec, _ = stack_file.load(path)
    assert spec.image == "flux:1"
    assert stack_file.kubernetes_settings(path) == (None, None)


def test_an_encrypted_minicluster_key_pulumi_alone_can_read_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="minicluster:image: an encrypted value cannot be read without Pulumi"):
        stack_file.read_config(written(tmp_path, **{"minicluster:image": ENCRYPTED}))


def test_the_plain_context_and_kubeconfig_are_the_stacks_cluster(tmp_path: Path) -> None:
    path = written(tmp_path, **{"kubernetes:context": "kind-flux", "kubernetes:kubeconfig": "~/.kube/lab"})
    assert stack_file.kubernetes_settings(path) == ("kind-flux", "~/.kube/lab")


def test_the_encrypted_ones_are_named_for_pulumi_to_read(tmp_path: Path) -> None:
    path = written(tmp_path, **{"kubernetes:context": "kind-flux", "kubernetes:kubeconfig": ENCRYPTED})
    assert stack_file.encrypted_kubernetes_settings(path) == ["kubernetes:kubeconfig"]


def test_the_ops_tool_without_pulumi_says_how_to_give_it_the_encrypted_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    written(tmp_path, **{"kubernetes:kubeconfig": ENCRYPTED})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))  # no pulumi here
    assert cli.main(["status", "--stack", "dev"]) == 2
    assert capsys.readouterr().err == (
        "error: the stack's kubernetes:kubeconfig is encrypted, which only pulumi can read, and pulumi is not on "
        "PATH: add it, or give this tool the same with --kubeconfig\n"
    )
