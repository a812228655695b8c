"""The Scale resource of an autoscaled cluster (autoscale.enabled), over gRPC as the engine drives it,
against the API stand-in: rank 0's autoscaler owns the running size, and `pulumi up` changes it only
when `size` itself changes."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from flux_minicluster.config import sizing
from flux_minicluster.resources import scale
from tests.kube_api import Cluster
from tests.provider_plugin import ProviderPlugin, grpc_error
from tests.resources.test_scale_provider import Running, inputs, plugin, real_rank0  # noqa: F401 -- the fixtures, shared


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


# -- the resize lease (config/sizing.py: RESIZING) ---------------------------------------------------


def lease_patches(api: Cluster) -> list[str | None]:
    """The values the Job's resize lease was patched to, in order (None: given back)."""
    return [body["metadata"]["annotations"][sizing.RESIZING] for method, path, body in api.requests
            if method == "PATCH" and path.endswith("/jobs/dev") and body and "metadata" in body]  # fmt: skip


def hold(api: Cluster, holder: str, seconds: float) -> None:
    job = api.jobs[("default", "dev")]
    job["metadata"]["annotations"] = {sizing.RESIZING: sizing.lease(holder, time.time() + seconds)}


def test_a_resize_takes_the_lease_and_gives_it_back(plugin: ProviderPlugin, api: Cluster) -> None:
    Running(api, 4)
    plugin.update("default/dev", autoscaled(plugin), autoscaled(plugin, jobUid="uid-2"))
    taken, given_back = lease_patches(api)
    assert taken is not None and taken.startswith("pulumi until ")
    assert given_back is None
    assert sizing.RESIZING not in api.jobs[("default", "dev")]["metadata"].get("annotations", {})


def test_a_resize_waits_for_the_autoscalers_change_to_end(plugin: ProviderPlugin, api: Cluster) -> None:
    Running(api, 4)
    hold(api, sizing.AUTOSCALER_HOLDER, 60)
    given_back: list[float] = []

    def give_back() -> None:
        given_back.append(time.monotonic())  # before the lease goes: a resize that went sooner finds no time
        api.jobs[("default", "dev")]["metadata"].pop("annotations")

    threading.Timer(1.5, give_back).start()
    outs = plugin.update("default/dev", autoscaled(plugin), autoscaled(plugin, jobUid="uid-2"))
    assert given_back, "the resize went on while the autoscaler held the lease"
    assert outs["outcome"] == "all 4 brokers are ready"


def test_an_autoscaler_change_that_outlasts_job_timeout_stops_the_resize(plugin: ProviderPlugin, api: Cluster) -> None:
    cluster = Running(api, 4)
    hold(api, sizing.AUTOSCALER_HOLDER, 60)
    details = grpc_error(
        lambda: plugin.update("default/dev", autoscaled(plugin), autoscaled(plugin, jobUid="uid-2", jobTimeout=1))
    )
    assert "rank 0's autoscaler is still resizing the cluster after 1s; nothing changed" in details
    assert lease_patches(api) == [] and cluster.patches() == []


def test_a_lease_past_its_time_holds_nothing(plugin: ProviderPlugin, api: Cluster) -> None:
    Running(api, 4)
    hold(api, sizing.AUTOSCALER_HOLDER, -1)  # its holder died mid-change
    outs = plugin.update("default/dev", autoscaled(plugin), autoscaled(plugin, jobUid="uid-2"))
    assert outs["outcome"] == "all 4 brokers are ready"
