"""A changed image on a persistent stack with a state volume, in real containers: `pulumi up` replaces
the Job and the new Job's pods run in the new image. On real Flux (marked realflux): the new rank 0
restarts the same instance from the state volume, so the jobs queued before the change run afterwards;
so do they after `rerun` is bumped, which replaces the Job as it is.
The state volume is a hostPath in the test's own folder, the stack pinned to the node by its hostname
label, as a stack with a node-local state volume is."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.node.stacks import StackOnRealNode

NEW_IMAGE = "ghcr.io/converged-computing/metric-lammps:latest"
"""Another image the node has (tests/engines/images.py makes one for each name the stack files give)."""


@pytest.fixture
def persistent(
    stack_on_real_node: Callable[..., StackOnRealNode], real_node: NodeInfo, tmp_path: Path
) -> StackOnRealNode:
    state = {"hostPath": str(tmp_path / "flux-state"), "checkpointPeriod": "1s"}
    pinned = {"nodeSelector": {"kubernetes.io/hostname": real_node.name}}
    cluster = stack_on_real_node(
        "interactive", **{**example("interactive"), "size": 2, "stateVolume": state, "pod": pinned}
    )
    cluster.stack.up()
    return cluster


def new_image(cluster: StackOnRealNode) -> None:
    cluster.stack.configure({**cluster.stack.config, "image": NEW_IMAGE})


def images(cluster: StackOnRealNode) -> set[str]:
    return {status.image for pod in cluster.pods() for status in pod.status.container_statuses or []}


def test_a_new_image_replaces_the_job_and_its_pods_run_in_it(persistent: StackOnRealNode) -> None:
    before = persistent.job().metadata.uid
    new_image(persistent)
    assert "to replace" in persistent.stack.preview().stdout
    persistent.stack.up()
    assert persistent.job().metadata.uid != before
    wait_until(lambda: persistent.running(2), "the new Job's two pods to run", 60, poll=0.2)
    assert images(persistent) == {NEW_IMAGE}
    # The old Job's events (its pods created, then stopped) stay for an hour: they are not the new Job's
    said = " ".join(persistent.stack.ops("status").split())
    assert "pods 2 Running" in said and "replaced" not in said


def test_a_preview_of_the_replacement_shows_the_job_keeping_its_name(persistent: StackOnRealNode) -> None:
    """pulumi-kubernetes previews the replacement of an object that keeps its name with a dry run under a
    made-up one. The preview shows what the update does all the same: the Scale, which takes the Job's
    name, is updated for the new Job (its uid), not replaced, and no output changes."""
    new_image(persistent)
    steps = persistent.stack.preview_steps()
    job, scale = steps[f"{persistent.name}-job"], steps[f"{persistent.name}-size"]
    assert (job["op"], scale["op"], scale["newState"]["inputs"]["job"]) == ("replace", "update", persistent.name)
    assert "jobName" not in persistent.stack.preview().stdout


@pytest.mark.realflux
@pytest.mark.parametrize("change", ["image", "rerun"])
def test_the_jobs_queued_before_a_new_job_run_afterwards(persistent: StackOnRealNode, change: str) -> None:
    """A new image, or `rerun` bumped (docs/how-it-works.md): the Job is replaced all the same."""

    def flux(*argv: str) -> str:
        return persistent.flux(0, *argv)

    flux("submit", "-N2", "sleep", "inf")  # holds every node: what comes next waits
    queued = [flux("submit", "-N1", "hostname").strip() for _ in range(3)]
    assert all(flux("jobs", "-no", "{state}", job).strip() == "SCHED" for job in queued)
    before = persistent.job().metadata.uid
    persistent.stack.configure(
        {**persistent.stack.config, **({"image": NEW_IMAGE} if change == "image" else {"rerun": 1})}
    )
    persistent.stack.up()
    assert persistent.job().metadata.uid != before
    wanted = {NEW_IMAGE} if change == "image" else {example("interactive")["image"]}
    wait_until(lambda: persistent.running(2) and images(persistent) == wanted, "the new Job's pods", 60, poll=0.2)
    wait_until(lambda: all(flux("jobs", "-no", "{result}", job).strip() == "COMPLETED" for job in queued),
               "the queued jobs to run in the restarted instance", 60, poll=0.5)  # fmt: skip


def test_a_new_keygen_image_or_timeout_changes_nothing_once_the_keypair_is_made(persistent: StackOnRealNode) -> None:
    """They say how the keypair is made: a preview shows nothing to do (not the certificate's Secret and
    the Job replaced, as an update's unknown outputs would), and `pulumi up` leaves the Job running."""
    before = persistent.job().metadata.uid
    persistent.stack.configure({**persistent.stack.config, "keygenImage": NEW_IMAGE, "keygenTimeout": 120})
    previewed = persistent.stack.preview().stdout
    assert "to replace" not in previewed and "to update" not in previewed, previewed
    assert "unchanged" in previewed
    persistent.stack.up()
    assert persistent.job().metadata.uid == before
