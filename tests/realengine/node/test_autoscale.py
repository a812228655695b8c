"""The autoscale example in real containers, on real Flux (marked realflux: the autoscaler runs with
Flux's Python): rank 0's autoscaler runs in its native sidecar, reaches the broker through the socket
on the volume they share, and the API server with the projected token mounted in its container alone;
it grows the Job for four jobs and shrinks it back, and the Job controller and the real kubelet start
and stop the pods. A Flux job, in the broker's container, finds no token."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from flux_minicluster.builders.names import AUTOSCALER_CONTAINER
from flux_minicluster.config.paths import SERVICE_ACCOUNT_DIR
from tests.autoscaled import example, held_together, shrinks
from tests.kubelet.pod import wait_until
from tests.realengine.node.stacks import StackOnRealNode

pytestmark = pytest.mark.realflux


@pytest.fixture
def autoscaled(stack_on_real_node: Callable[..., StackOnRealNode]) -> StackOnRealNode:
    cluster = stack_on_real_node("autoscale", **example())
    cluster.stack.up()
    return cluster


def test_the_autoscaler_in_its_sidecar_grows_for_four_jobs_and_shrinks_back(autoscaled: StackOnRealNode) -> None:
    assert autoscaled.running(1)
    wait_until(
        lambda: "sizing the cluster to its queue" in autoscaled.log(0, AUTOSCALER_CONTAINER), "the autoscaler", 60
    )
    jobs = autoscaled.flux(0, "submit", "--cc=1-4", "-N1", *held_together(4)).split()
    wait_until(lambda: autoscaled.events("Grew"), "the autoscaler to grow the Job", 60, poll=0.2)
    wait_until(lambda: all(autoscaled.flux(0, "jobs", "-no", "{status}", job).strip() == "COMPLETED" for job in jobs),
               "the 4 jobs to complete", 120, poll=0.5)  # fmt: skip
    assert autoscaled.events("Grew") == ["grew from 1 to 4 brokers: 3 queued jobs need 3 nodes, 0 free"]
    assert sorted(autoscaled.flux(0, "jobs", "-no", "{ranks}", job).strip() for job in jobs) == ["0", "1", "2", "3"]
    wait_until(lambda: autoscaled.size == 1 and len(autoscaled.pods()) == 1, "the shrink back to 1", 90)
    wait_until(lambda: shrinks(autoscaled.events("Shrank"))[-1][1] == 1, "the last Shrank Event", 30, poll=0.2)
    log = autoscaled.log(0, AUTOSCALER_CONTAINER)
    assert "403" not in log and "404" not in log, log


def test_a_flux_job_finds_no_token(autoscaled: StackOnRealNode) -> None:
    token = f"{SERVICE_ACCOUNT_DIR}/token"
    said = autoscaled.flux(0, "run", "sh", "-c", f"test -e {token} && echo found || echo absent")
    assert said.strip() == "absent"
    assert autoscaled.exec(0, "sh", "-c", f"test -e {token} && echo found || echo absent").strip() == "absent"
