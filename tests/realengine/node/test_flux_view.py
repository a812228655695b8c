"""The flux view on the real node: an application image with no Flux of its own, and Flux copied into
each pod by the flux view's init container from a view image (laid out as the flux-operator's
flux-view images are: tests/engines/images.py), under a real `pulumi up`. As root the Flux container
restores the view's software where its links point; under securityProfile restricted (uid 1000, which
may not write there) the pod mounts it there instead. The view's Flux is the stand-in: flux-core's
build here cannot move into a view (its paths are compiled in), so nothing here needs real Flux."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flux_minicluster.config import paths
from flux_minicluster.config.flux_extras import DEFAULT_FLUX_VIEW_IMAGE
from tests.engines.images import APP_WITHOUT_FLUX, VIEW_FLUX_BIN
from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode

VIEW = {"enabled": True, "image": DEFAULT_FLUX_VIEW_IMAGE}
ENFORCED = {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}


def one_shot(make: Callable[..., StackOnRealNode], **overrides: Any) -> StackOnRealNode:
    config = {**example("dev"), "size": 2, "tasks": 2, "image": APP_WITHOUT_FLUX, "fluxView": VIEW}
    return make("dev", **config, **overrides)


def init_container_exits(cluster: StackOnRealNode) -> list[tuple[str, int]]:
    """Each pod's init containers, by name, with the code each exited with."""
    return [
        (status.name, status.state.terminated.exit_code)
        for pod in cluster.pods()
        for status in pod.status.init_container_statuses or []
    ]


def test_a_job_whose_image_has_no_flux_completes_with_flux_from_the_view(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    cluster = one_shot(stack_on_real_node)
    cluster.stack.up()
    assert cluster.condition("Complete") == "True"
    assert {container.image for pod in cluster.pods() for container in pod.spec.containers} == {APP_WITHOUT_FLUX}
    assert init_container_exits(cluster) == [(paths.FLUX_VIEW, 0)] * 2


def test_a_broker_finds_flux_through_the_view_and_its_software_where_the_links_point(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    config = {**example("interactive"), "size": 2, "image": APP_WITHOUT_FLUX, "fluxView": VIEW}
    cluster = stack_on_real_node("interactive", **config)
    cluster.stack.up()
    assert cluster.running(2)
    view = cluster.spec.flux_view.path
    assert cluster.exec(0, "sh", "-c", "command -v flux || echo none").strip() == "none"  # the image's PATH
    assert cluster.exec(1, "readlink", f"{view}/view/bin/flux").strip() == f"{VIEW_FLUX_BIN}/flux"
    assert cluster.exec(1, "sh", "-c", f"test -x {VIEW_FLUX_BIN}/flux && echo restored").strip() == "restored"


@pytest.mark.namespace_labels(ENFORCED)
def test_under_restricted_uid_1000_gets_the_views_software_mounted_and_the_job_completes(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    cluster = one_shot(stack_on_real_node, securityProfile="restricted")
    cluster.stack.up()
    assert cluster.condition("Complete") == "True"
    assert init_container_exits(cluster) == [(paths.FLUX_VIEW, 0)] * 2


def test_without_the_view_the_keygen_pod_says_the_image_has_no_flux(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    """The keygen container ends at once (exit 127), which cuts the exec reading its certificate: the
    user is told why it ended, not that a connection ended."""
    cluster = stack_on_real_node("dev", **{**example("dev"), "image": APP_WITHOUT_FLUX})
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    assert f"image {APP_WITHOUT_FLUX!r} has no `flux` command (exit 127)" in refused.stdout
    assert "pods" not in cluster.left() and "jobs" not in cluster.left()  # the keygen pod deleted, no Job made
