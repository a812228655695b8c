"""Secret config in real containers: a value set with `pulumi config set --secret` reaches the broker's
environment through the kubelet's secretKeyRef, while the API server holds it in its own Secret alone."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode
from tests.realengine.test_pulumi_secrets import holders


def test_a_secret_value_reaches_the_brokers_environment_and_no_object_but_its_secret(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    cluster = stack_on_real_node("interactive", **{**example("interactive"), "size": 2})
    token = secrets.token_hex(16)
    cluster.stack.set_secret("minicluster:environment.API_TOKEN", token)
    cluster.stack.up()
    assert [cluster.exec(rank, "printenv", "API_TOKEN").strip() for rank in (0, 1)] == [token, token]
    (holder,) = holders(cluster, token)
    assert holder.startswith("Secret/interactive-config-secret-")
