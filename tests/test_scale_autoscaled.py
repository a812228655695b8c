"""The Scale resource of an autoscaled cluster (autoscale.enabled), over gRPC as the engine drives it,
against the API stand-in: rank 0's autoscaler owns the running size, and `pulumi up` changes it only
when `size` itself changes."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.resources import scale
from tests.kube_api import Cluster
from tests.provider_plugin import ProviderPlugin
from tests.test_scale_provider import Running, api, inputs, plugin, real_rank0  # noqa: F401 -- the fixtures, shared


def autoscaled(plugin: ProviderPlugin, **overrides: Any) -> dict[str, Any]:
    return inputs(plugin, autoscale=True, **overrides)


def test_an_update_that_leaves_size_alone_leaves_the_autoscalers_size(plugin: ProviderPlugin, api: Cluster) -> None:
    cluster = Running(api, 3)  # the autoscaler grew it from 1 to 3
    outs = plugin.update("default/dev", autoscaled(plugin, size=1), autoscaled(plugin, size=1, shrinkTimeout=60))
    assert outs["outcome"] == scale.AUTOSCALED
    assert cluster.job_size == (3, 3)
    assert api.requests == []


def test_refresh_does_not_call_the_autoscalers_size_drift(plugin: ProviderPlugin, api: Cluster) -> None:
    Running(api, 3)
    _, props = plugin.read("default/dev", autoscaled(plugin, size=1))
    assert props["size"] == 1
    assert api.requests == []


@pytest.mark.realflux
def test_a_changed_size_still_resizes_from_the_size_the_autoscaler_left(
    plugin: ProviderPlugin, api: Cluster, minicluster: Any
) -> None:
    cluster = Running(api, 3, rank0=real_rank0(minicluster, 3))
    outs = plugin.update("default/dev", autoscaled(plugin, size=1), autoscaled(plugin, size=5))
    assert cluster.job_size == (5, 5)
    assert [command[2:4] for command in cluster.execs] == [["3", "5"]]
    assert outs["outcome"].endswith("all 5 brokers are ready")


def test_a_new_job_is_brought_to_the_configured_size(plugin: ProviderPlugin, api: Cluster) -> None:
    cluster = Running(api, 4)
    outs = plugin.update("default/dev", autoscaled(plugin), autoscaled(plugin, jobUid="uid-2"))
    assert outs["outcome"] == "all 4 brokers are ready"
    assert cluster.job_size == (4, 4)
