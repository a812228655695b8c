"""A stack's own certificate (`minicluster:curveCertificate`) under the real Pulumi engine, the pods in
real containers: set with `pulumi config set --secret`, the brokers join with it (no keygen runs) and
its secret key is in its Secret alone; kept in plain text in the stack file, it is refused before
anything is made, without being echoed."""

from __future__ import annotations

import json
from collections.abc import Callable

from flux_minicluster.config import certificate
from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode
from tests.realengine.node.test_secrets import holders

KEY = "minicluster:curveCertificate"


def test_a_certificate_set_as_a_secret_is_the_clusters_and_stays_in_its_secret(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    cluster = stack_on_real_node("dev", **example("dev"))
    own = certificate.generate("dev-0")
    cluster.stack.set_secret(KEY, own.text())
    printed = cluster.stack.up()
    assert cluster.condition("Complete") == "True"  # the brokers joined: every one holds this certificate
    assert cluster.stack.outputs()["publicKey"] == own.public_key
    assert not any(kind.endswith("CurveCertificate") for kind in cluster.stack.resource_types())  # no keygen
    (holder,) = holders(cluster, own.secret_key)
    assert holder.startswith("Secret/dev-curve-")
    seen = cluster.stack.state_text() + json.dumps(cluster.stack.outputs()) + printed.stdout + printed.stderr
    assert own.secret_key not in seen + (cluster.stack.project / "Pulumi.dev.yaml").read_text()


def test_a_certificate_kept_in_plain_text_is_refused_before_anything_is_made(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    own = certificate.generate("dev-0")
    cluster = stack_on_real_node("dev", **example("dev"))
    cluster.stack.configure({**cluster.stack.config, "curveCertificate": own.text()})  # as a plain `config set`
    refused = cluster.stack.up(check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert f"{KEY} holds the cluster's secret key, and the stack keeps it in plain text" in said
    assert own.secret_key not in said
    assert cluster.stack.resource_types() == ["pulumi:pulumi:Stack"]
    assert holders(cluster, own.public_key) == []
