"""What wakes the Scale's wait for a Job's brokers, where no later pod's change would: driven over gRPC as
the engine drives it, against the API stand-in. Both found on the real engines.

- A new pod that turns unschedulable after the wait began, and changes no more: scheduleTimeout starts
  then, and the wait's watch must end by it (a grow on the real node rolled back after minutes).
- A Job that ends while its pods go: a replaced Job whose pods could not be scheduled is stopped (the
  scheduling guard). Kubernetes (1.31 and newer) marks it FailureTarget, deletes its pods, then marks it
  Failed, a change of the Job alone (the Scale waited out jobTimeout).
- A new pod with a node whose image the kubelet cannot pull: no node is missing, and nothing changes
  while the kubelet backs off (the Scale waited out jobTimeout)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from flux_minicluster.builders.names import STOPPED
from flux_minicluster.cluster.waiting import Progress
from flux_minicluster.resources import scale
from tests.kube_api import Cluster, StandIn, unschedulable, waiting
from tests.kube_api.samples import BROKER, DEV
from tests.provider_plugin import ProviderPlugin, grpc_error, served
from tests.resources.test_scale_provider import FULL, SCALE, Running, inputs

DEADLINE = "DeadlineExceeded: Job was active longer than specified deadline"


@pytest.fixture(scope="module")
def plugin(api_server: StandIn) -> Iterator[ProviderPlugin]:
    yield from served(scale.ScaleProvider(), SCALE, api_server.cluster.kubeconfig)


def test_a_job_that_fails_after_its_pods_are_gone_ends_the_wait_with_its_reason(
    plugin: ProviderPlugin, api_server: StandIn
) -> None:
    api: Cluster = api_server.cluster.reset()
    Running(api, 4)
    for rank in range(4):  # none placed
        api.set_pod("default", f"dev-{rank}-abcde", status=unschedulable(FULL), node=None)

    def job_controller_stops_it() -> None:  # once the Scale watches the pods, as the Job controller does
        while not api.watches:
            time.sleep(0.01)
        reason, message = DEADLINE.split(": ", 1)
        with api.lock:
            conditions = api.jobs[("default", "dev")]["status"]["conditions"]
            conditions.append({"type": "FailureTarget", "status": "True", "reason": reason, "message": message})
        for rank in range(4):
            api.delete_pod("default", f"dev-{rank}-abcde")
        time.sleep(0.5)  # then Failed: a change of the Job's, which no pod's change follows
        with api.lock:
            conditions.append({"type": "Failed", "status": "True", "reason": reason, "message": message})

    threading.Thread(target=job_controller_stops_it, daemon=True).start()
    details = grpc_error(lambda: plugin.create(inputs(plugin, jobTimeout=60, scheduleTimeout=300)))
    assert details.rstrip().endswith(f"ResizeFailed: the Job failed ({DEADLINE})"), details[-300:]


def test_a_new_pod_that_turns_unschedulable_later_rolls_the_grow_back_after_schedule_timeout(
    plugin: ProviderPlugin, api_server: StandIn
) -> None:
    api: Cluster = api_server.cluster.reset()
    cluster = Running(api, 2, new_pods={"phase": "Pending"})  # made by the Job controller, not yet looked at
    api.exec_handler = lambda pod, command: ("", "", 0)  # rank 0's undrain (resize.sh: test_real_resize.py)

    def scheduler_gives_up() -> None:  # once the Scale watches the new pod
        while not api.watches or ("default", "dev-2-abcde") not in api.pods:
            time.sleep(0.01)
        time.sleep(0.2)
        watched.append(len(api.watch_seconds))
        api.set_pod("default", "dev-2-abcde", status=unschedulable(FULL))

    watched: list[int] = []
    threading.Thread(target=scheduler_gives_up, daemon=True).start()
    grow = inputs(plugin, size=3, jobTimeout=600)  # a watch may then last until a progress line is due
    details = grpc_error(lambda: plugin.update("default/dev", inputs(plugin, size=2), grow))
    assert f"the new pods could not be scheduled for 1s (minicluster:scheduleTimeout): Unschedulable: {FULL}" in details
    assert cluster.job_size == (2, 2)  # rolled back
    # the watch open when the pod turned unschedulable gave way to one that ends by scheduleTimeout
    open_then, after = api.watch_seconds[watched[0] - 1], api.watch_seconds[watched[0] :]
    assert open_then >= Progress.AFTER and after and min(after) <= 2, (open_then, after)


def test_a_grow_whose_new_pods_cannot_pull_their_image_is_rolled_back_after_schedule_timeout(
    plugin: ProviderPlugin, api_server: StandIn
) -> None:
    api: Cluster = api_server.cluster.reset()
    cluster = Running(api, 2, new_pods=waiting("ErrImagePull", "not found", container=BROKER))
    api.exec_handler = lambda pod, command: ("", "", 0)  # rank 0's undrain (resize.sh: test_real_resize.py)
    grow = inputs(plugin, size=3, jobTimeout=600)
    details = grpc_error(lambda: plugin.update("default/dev", inputs(plugin, size=2), grow))
    assert (
        f"the new pods could not start for 1s (minicluster:scheduleTimeout): container '{BROKER}' cannot pull image "
        f"'{DEV.image}' (ErrImagePull: not found); check the image's name and tag"
    ) in details
    assert cluster.job_size == (2, 2)  # rolled back


def test_a_job_its_scheduling_guard_stopped_is_said_to_be(plugin: ProviderPlugin, api_server: StandIn) -> None:
    """Beside the guard's own error, the Scale's names the stop, not only the Job's DeadlineExceeded."""
    api: Cluster = api_server.cluster.reset()
    Running(api, 2)
    for rank in range(2):  # none started
        api.set_pod("default", f"dev-{rank}-abcde", status=waiting("ErrImagePull", "not found", container=BROKER))
    why = "its pods could not start for 180s (minicluster:scheduleTimeout)"

    def guard_stops_it() -> None:  # once the Scale watches the pods; then the Job controller fails the Job
        while not api.watches:
            time.sleep(0.01)
        reason, message = DEADLINE.split(": ", 1)
        with api.lock:
            stopped = api.jobs[("default", "dev")]
            stopped["metadata"].setdefault("annotations", {})[STOPPED] = why
            failed = {"status": "True", "reason": reason, "message": message}
            stopped["status"]["conditions"] = [{"type": kind, **failed} for kind in ("FailureTarget", "Failed")]
        for rank in range(2):
            api.delete_pod("default", f"dev-{rank}-abcde")

    threading.Thread(target=guard_stops_it, daemon=True).start()
    details = grpc_error(lambda: plugin.create(inputs(plugin, size=2, jobTimeout=60, scheduleTimeout=300)))
    assert details.rstrip().endswith(f"the Job failed ({DEADLINE}): its scheduling guard stopped it, {why}")
