"""A stack whose cluster is gone, under the real Pulumi engine: its kubeconfig (the stack's
kubernetes:kubeconfig, a file) names an address where nothing answers, as after `kind delete cluster`
and a new cluster elsewhere. pulumi-kubernetes fails `pulumi destroy` and names its way out,
PULUMI_K8S_DELETE_UNREACHABLE=true, with which it drops its objects from the state; the MiniCluster's own
resources that talk to the cluster (the JobDeletion's wait, here) drop out too, so that the destroy ends
with an empty stack. The objects themselves are still on the real control plane (it never went): the
test's namespace takes them."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.engines.control_plane import ControlPlane
from tests.harness import example
from tests.kube_api import refused_url
from tests.realengine.node.stacks import StackOnRealNode


def test_pulumi_destroy_with_delete_unreachable_empties_the_stack(
    stack_on_real_node: Callable[..., StackOnRealNode], control_plane: ControlPlane, tmp_path: Path
) -> None:
    kubeconfig = Path(shutil.copy(control_plane.kubeconfig, tmp_path / "kubeconfig"))
    cluster = stack_on_real_node("kept", **{**example("interactive"), "size": 2, "keeper": {"enabled": True}})
    cluster.stack.configure({**cluster.stack.config, "kubernetes:kubeconfig": str(kubeconfig)})
    cluster.stack.up()
    document = json.loads(kubeconfig.read_text())
    for entry in document["clusters"]:
        entry["cluster"]["server"] = re.sub(r"^http://", "https://", refused_url())
    kubeconfig.write_text(json.dumps(document))
    refused = cluster.stack.pulumi("destroy", "--yes", "--skip-preview", check=False)
    assert refused.returncode != 0 and "PULUMI_K8S_DELETE_UNREACHABLE" in refused.stdout
    cluster.stack.env["PULUMI_K8S_DELETE_UNREACHABLE"] = "true"
    cluster.stack.pulumi("destroy", "--yes", "--skip-preview")
    assert cluster.stack.resource_types() == []
