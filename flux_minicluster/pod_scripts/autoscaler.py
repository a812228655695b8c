"""Rank 0's autoscaler (autoscale.enabled): sizes the cluster to its queue, with Flux's own Python
(`flux python autoscaler.py`, run by autoscaler.sh in the autoscaler container of rank 0's pod: the
only container with the service account's token; it reaches the broker through its local socket).

Each look reads the instance (one RPC each: resources, their status, the jobs waiting for resources),
lets autoscaling.decide choose, and acts the way a `pulumi up` resize does (flux_minicluster/cluster/
scale.py): resize.sh drains or undrains the ranks concerned, then the scale ConfigMap and the Job get
the new size (sizing.py, the same patches, the same field manager). A grow waits for the new brokers
to come up within scheduleTimeout, and is rolled back if they do not. Every change is an Event on the
Job and a line in the autoscaler container's log. A look follows each job event (a submit, an end) at once, and at
least every MC_AUTOSCALE_INTERVAL seconds.

Environment (builders/files.py): MC_AUTOSCALE_INTERVAL, MC_AUTOSCALE_DOWN_AFTER, MC_AUTOSCALE_COOLDOWN,
MC_AUTOSCALE_MIN_SIZE (empty: none), MC_MAX_SIZE, MC_SCHEDULE_TIMEOUT, MC_NAMESPACE,
MC_JOB, MC_SCALE_CONFIG, MC_SERVICE_ACCOUNT_DIR, MC_RUN_CONFIG_DIR, MC_LOCAL_URI, MC_CALLED_OFF,
MC_LOG_PREFIX; KUBERNETES_SERVICE_HOST and _PORT, as Kubernetes sets them in every pod.
"""

import math
import os
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its modules are beside it

import autoscaling  # type: ignore[import-not-found]
import sizing  # type: ignore[import-not-found]  # flux_minicluster/config/sizing.py
from cluster_api import ApiError, ClusterApi  # type: ignore[import-not-found]

SETTLE = 0.2
"""Seconds a look waits after a job event for the events that come with it (a burst of submits)."""
POLL = 0.5
"""Seconds between two looks at the new brokers while a grow waits for them."""
LEASE_MARGIN = 60
"""Seconds the resize lease outlasts a change's longest part (a grow's wait), for the requests around it."""
SHRINK_WAIT = 1
"""resize.sh's wait for jobs on the ranks a shrink takes: they were idle, so a job there landed since
the look, and calls the shrink off."""


def say(line: str) -> None:
    print(f"{os.environ['MC_LOG_PREFIX']}[rank 0]: autoscaler: {line}", file=sys.stderr, flush=True)


def observe(handle: Any, size: int) -> autoscaling.Observed:
    import readings  # type: ignore[import-not-found]  # beside it; it loads Flux's bindings
    from flux.resource import resource_list, resource_status  # type: ignore[import-not-found]

    listing = resource_list(handle).get()
    status = resource_status(handle).get()
    per_node = max(1, listing.all.ncores // max(1, listing.all.nnodes))
    # Queues that start no job: waiting there is not a reason to grow (the default queue's jobs have no name).
    stopped = {queue["name"] or None for queue in readings.queues(handle) if not queue["started"]}
    waiting = handle.rpc("job-list.list", {
        "max_entries": 0, "attrs": ["nnodes", "ncores", "priority", "queue"], "constraint": {"states": ["sched"]},
    }).get()["jobs"]  # fmt: skip
    needs = tuple(
        nodes_needed(job, per_node) for job in waiting if job.get("priority", 1) > 0 and job.get("queue") not in stopped
    )
    return autoscaling.Observed(
        size=size,
        up=frozenset(status.online),
        drained=frozenset(readings.drained_ranks(status)),
        busy=frozenset(listing.allocated.ranks),
        waiting=needs,
    )


def nodes_needed(job: "dict[str, Any]", cores_per_node: int) -> int:
    """The nodes a waiting job needs: the ones it asked for, else its cores in whole nodes."""
    if job.get("nnodes"):
        return int(job["nnodes"])
    return max(1, math.ceil(int(job.get("ncores", 1)) / cores_per_node))


class Autoscaler:
    def __init__(self, handle: Any, api: ClusterApi) -> None:
        env = os.environ
        self.handle, self.api = handle, api
        self.job_name, self.scale_config = env["MC_JOB"], env["MC_SCALE_CONFIG"]
        self.min_size = int(env["MC_AUTOSCALE_MIN_SIZE"]) if env["MC_AUTOSCALE_MIN_SIZE"] else None
        self.max_size = int(env["MC_MAX_SIZE"])
        self.bounds = autoscaling.Bounds(
            smallest=sizing.smallest_size(self.min_size), largest=self.max_size,
            scale_down_after=float(env["MC_AUTOSCALE_DOWN_AFTER"]), cooldown=float(env["MC_AUTOSCALE_COOLDOWN"]),
        )  # fmt: skip
        self.schedule_timeout = float(env["MC_SCHEDULE_TIMEOUT"])
        self.idle: dict[int, float] = {}
        self.last_change: float | None = None
        self.held_off = False

    def look(self) -> None:
        """One look: the Job's size (a `pulumi up` may have changed it), the instance, a decision."""
        job = self.api.job(self.job_name)
        holder = sizing.lease_holder(job["metadata"].get("annotations"), time.time())
        if holder == sizing.PULUMI:
            if not self.held_off:
                say("a `pulumi up` is resizing the cluster: waiting for it to end")
            self.held_off = True
            return
        if holder == sizing.AUTOSCALER_HOLDER:  # a resize's end, or a previous rank 0's, could not give it back
            say("giving back the resize lease a resize left held (the API server did not answer at its end)")
            self.give_lease_back(job)
            return
        self.held_off = False
        size = int(job["spec"]["completions"])
        observed = observe(self.handle, size)
        now = time.monotonic()
        self.idle = autoscaling.idle_since(self.idle, observed, now)
        decision = autoscaling.decide(observed, self.idle, self.bounds, now, self.last_change)
        if decision is not None and self.take_lease(job):
            try:
                self.resize(job, size, decision)
            finally:
                self.give_lease_back()
            self.last_change = time.monotonic()

    def take_lease(self, job: "dict[str, Any]") -> bool:
        """The resize lease on the Job (sizing.RESIZING), unless the Job changed since it was read (409)."""
        until = time.time() + self.schedule_timeout + LEASE_MARGIN
        patch = sizing.lease_patch(sizing.lease(sizing.AUTOSCALER_HOLDER, until), job["metadata"]["resourceVersion"])
        try:
            self.api.patch_job(self.job_name, patch, sizing.FIELD_MANAGER)
        except ApiError as error:
            if error.status != 409:
                raise
            return False  # a `pulumi up` took it, or changed the Job: the next look sees what
        return True

    def give_lease_back(self, job: "dict[str, Any] | None" = None) -> None:
        """The lease back, if it is still this autoscaler's: on the Job as `job` says, else as read now."""
        job = job or self.api.job(self.job_name)
        if sizing.lease_holder(job["metadata"].get("annotations"), time.time()) == sizing.AUTOSCALER_HOLDER:
            patch = sizing.lease_patch(None, job["metadata"]["resourceVersion"])
            self.api.patch_job(self.job_name, patch, sizing.FIELD_MANAGER)

    def resize(self, job: "dict[str, Any]", size: int, decision: autoscaling.Decision) -> None:
        what = f"{'growing' if decision.size > size else 'shrinking'} from {size} to {decision.size} brokers"
        say(f"{what}: {decision.reason}")
        if not self.prepare(size, decision.size):
            return
        try:
            self.set_size(decision.size)
        except ApiError as error:
            self.prepare(decision.size, size)  # the ranks drained or undrained go back as they were
            self.tell(job, sizing.RESIZE_FAILED, f"{what} failed: {error}; the size stays {size}", warning=True)
            return
        if decision.size < size:
            self.tell(job, sizing.SHRANK, f"shrank from {size} to {decision.size} brokers: {decision.reason}")
            return
        self.tell(job, sizing.GREW, f"grew from {size} to {decision.size} brokers: {decision.reason}")
        if not self.await_brokers(size, decision.size):
            self.roll_back(job, size, decision.size)

    def prepare(self, size: int, target: int) -> bool:
        """resize.sh in this container: it drains (shrink) or undrains (grow) the ranks concerned, and
        writes its own lines to this container's log."""
        script = os.path.join(os.environ["MC_RUN_CONFIG_DIR"], "resize.sh")
        done = subprocess.run(["bash", script, str(size), str(target), "wait", str(SHRINK_WAIT)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        if done.returncode == 0:
            return True
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        called_off = done.returncode == int(os.environ["MC_CALLED_OFF"])
        say(f"the resize to {target} is called off: {lines[-1] if lines else 'resize.sh failed'}" if called_off
            else f"rank 0 could not prepare the resize to {target} (status {done.returncode})")  # fmt: skip
        return False

    def set_size(self, size: int) -> None:
        """What a `pulumi up` resize writes: the scale files first (new brokers read them), then the Job."""
        config_patch = sizing.scale_config_patch(size, self.min_size, self.max_size)
        self.api.patch_config_map(self.scale_config, config_patch, sizing.FIELD_MANAGER)
        self.api.patch_job(self.job_name, sizing.job_patch(size), sizing.FIELD_MANAGER)

    def await_brokers(self, size: int, target: int) -> bool:
        from flux.resource import resource_status

        coming = set(range(size, target))
        deadline = time.monotonic() + self.schedule_timeout
        while not coming <= set(resource_status(self.handle).get().online):
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL)
        ranks = autoscaling.span(size, target - 1)
        say(f"ranks {ranks} are up" if target - size > 1 else f"rank {ranks} is up")
        return True

    def roll_back(self, job: "dict[str, Any]", size: int, target: int) -> None:
        """The new brokers did not come within scheduleTimeout: back to the old size, unless work already
        runs on those that came (resize.sh then calls the shrink off, and the size stays)."""
        why = f"the new brokers were not up within {self.schedule_timeout:g}s (scheduleTimeout)"
        if not self.prepare(target, size):
            say(f"{why}; the size stays {target}: jobs run on the ranks that came")
            return
        try:
            self.set_size(size)
        except ApiError as error:
            self.tell(job, sizing.RESIZE_FAILED, f"{why}, and the rollback failed: {error}", warning=True)
            return
        self.tell(job, sizing.GROW_ROLLED_BACK, f"{why}: back to {size} brokers", warning=True)

    def tell(self, job: "dict[str, Any]", reason: str, message: str, warning: bool = False) -> None:
        say(message)
        try:
            self.api.event(job, reason, message, warning, sizing.AUTOSCALER)
        except ApiError as error:
            say(f"could not record the Event ({error})")


def connect() -> Any:
    """This pod's broker, once it runs: the autoscaler starts beside it, and loads Flux's bindings only
    once the broker's socket is there (while the broker comes up, the CPU is the broker's)."""
    uri = os.environ["MC_LOCAL_URI"]
    while not os.path.exists(uri[len("local://") :]):
        time.sleep(0.2)
    import flux  # type: ignore[import-not-found]

    while True:
        try:
            handle = flux.Flux(uri)
            if handle.rpc("state-machine.get").get()["state"] == "run":
                return handle
        except OSError:
            pass
        time.sleep(1)


def main() -> int:
    try:
        api = ClusterApi(os.environ["MC_SERVICE_ACCOUNT_DIR"], os.environ["MC_NAMESPACE"])
    except (KeyError, OSError) as missing:  # no API address, or no service account mounted
        say(f"cannot reach the Kubernetes API from this pod ({missing!r}): the cluster keeps its size")
        return 1
    handle = connect()
    autoscaler = Autoscaler(handle, api)
    interval = float(os.environ["MC_AUTOSCALE_INTERVAL"])
    events = job_events(handle, interval)
    say(f"sizing the cluster to its queue, between {autoscaler.bounds.smallest} and {autoscaler.max_size} brokers")
    failing = ""
    while True:
        try:
            autoscaler.look()
            failing = ""
        except (ApiError, OSError) as error:  # said once until it changes: the next look tries again
            if str(error) != failing:
                say(f"cannot look at the cluster: {error}")
            failing = str(error)
        wait_for_news(events, interval)


def job_events(handle: Any, interval: float) -> Any:
    """The job manager's journal, which wakes a look at each job event; None where this Flux has no
    journal for Python (flux-core releases before 2024): then looks come every `interval` seconds only."""
    try:
        from flux.job import JournalConsumer  # type: ignore[import-not-found]

        return JournalConsumer(handle, full=False).start()
    except (ImportError, OSError) as missing:
        say(f"no job journal ({missing}): looking every {interval:g}s")
        return None


def wait_for_news(events: Any, interval: float) -> None:
    """Until a job event, then a moment for those that come with it, or `interval` seconds."""
    if events is None:
        time.sleep(interval)
        return
    try:
        events.poll(timeout=interval)
    except TimeoutError:
        return
    deadline = time.monotonic() + SETTLE
    while time.monotonic() < deadline:
        try:
            events.poll(timeout=max(0.001, deadline - time.monotonic()))
        except TimeoutError:
            return


if __name__ == "__main__":
    sys.exit(main())
