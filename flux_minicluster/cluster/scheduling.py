"""Failing fast when the Job's pods cannot be scheduled, created or started.

pulumi-kubernetes awaits the Job itself: it shows the Job's progress and warning events while it
waits, but it stops early only for a Job that Failed with BackoffLimitExceeded or DeadlineExceeded,
and otherwise waits out jobTimeout (an hour by default). So the Job keeps that await, and this guard
runs beside it: it follows the Job's pods, and if some are held back for scheduleTimeout (the
scheduler finds no node, the Job controller cannot create them, over quota say, or the kubelet
cannot start them: an image it cannot pull, a ConfigMap key the environment names missing), it sets
the Job's activeDeadlineSeconds (a mutable field) so that the Job fails with DeadlineExceeded and the
provider's await ends at once. The guard then fails with the last reason it saw. It is done as soon
as every pod has started, or the Job has finished. With a gang scheduler (scheduler.gang) it does the
same: the gang's pods stay unscheduled together until all fit, and the message says so.

It guards the Job of its own revision (the Job's annotation), and that Job's pods alone (their Job's
uid): when the Job is replaced, the guard's replacement starts while the old Job and its pods are still
there, and once took the old pods, scheduled long before, for the new Job's. A Job a guard stopped
carries why (names.STOPPED): `pulumi up --replace` of it (the fix outside the stack config) makes a new
Job of the same revision, and its guard waits past the stopped one for it.
"""

from __future__ import annotations

from typing import Any

from flux_minicluster.builders.names import REVISION, STOPPED
from flux_minicluster.cluster import api_calls, objects, watching
from flux_minicluster.cluster.waiting import Clock, Wait
from flux_minicluster.config.lifecycle import DELETION_MARGIN, POD_GRACE


def stop_now(why: str) -> dict[str, Any]:
    """The patch that stops the Job, saying why: an activeDeadlineSeconds already past for any Job that
    has started (the Job controller fails it with DeadlineExceeded)."""
    return {"metadata": {"annotations": {STOPPED: why}}, "spec": {"activeDeadlineSeconds": 1}}


JOB_CREATION = 30.0
"""Seconds the guard waits for its Job once no Job of that name and none of its pods are there: the
engine creates the Job beside the guard, so a Job that does not come by then will not (its create
failed, or `pulumi up` was cancelled), and the engine waits for the guard all the same."""


OTHER_FIXES = {
    "be scheduled": "room added to the cluster",
    "be created": "the quota raised",
    "start": "the image pushed, the pull Secret or the ConfigMap made",
}
"""What a fix outside the stack config may be, for each thing the Job's pods could not do."""


class HeldBack(RuntimeError):
    """The Job's pods could not be scheduled, created or started; the Job has been stopped."""


class JobNotCreated(RuntimeError):
    """The Job this guard was made for did not come."""


class StoppedBefore(RuntimeError):
    """The Job is the one a guard stopped in an earlier update, and this update does not replace it."""


def guard(
    api_client: Any,
    namespace: str,
    job: str,
    selector: dict[str, str],
    size: int,
    schedule_timeout: float,
    job_urn: str,
    revision: str,
    clock: Clock | None = None,
    gang: str | None = None,
    job_timeout: float = float("inf"),
) -> str:
    """What became of the pods of the Job of `revision`: every one started, the Job finished, or
    `job_timeout` (jobTimeout, the Job's own wait) passed first. Raises HeldBack, JobNotCreated or
    StoppedBefore."""
    going = Wait(POD_GRACE + DELETION_MARGIN + JOB_CREATION, clock)  # a replaced Job and its pods go first
    absent = Wait(float("inf"), clock)  # how long neither a Job nor a pod has been there
    kept = Wait(float("inf"), clock)  # how long a Job a guard stopped has been there, not being deleted
    replace = f"pulumi up --replace '{job_urn}'"
    # Until every pod has started, or the Job has finished. No longer than the Job's own wait: a pod can
    # wait without a reason to stop it (a volume it cannot mount), and the engine would wait for the guard.
    wait = Wait(job_timeout, clock)
    quiet = [wait.clock.poll]  # without pods to watch (no Job yet, pods not created), look again this soon

    def next_look() -> float:
        return min(wait.held_until(schedule_timeout) - wait.clock.now(), quiet[0])

    for listed in watching.pods(api_client, namespace, objects.label_selector(selector), next_look):
        found = api_calls.existing(api_client, api_calls.jobs(namespace, job))
        marks = (found.metadata.annotations or {}) if found is not None else {}
        if found is None or marks.get(REVISION) != revision or STOPPED in marks:
            staying = found is not None and STOPPED in marks and not found.metadata.deletion_timestamp
            if kept.held_for(staying) >= JOB_CREATION:
                raise StoppedBefore(
                    f"the Job {namespace}/{job} is the one its scheduling guard stopped in an earlier `pulumi up` "
                    f"({marks[STOPPED]}), and this update does not replace it. After a fix outside the stack "
                    f"config (room added to the cluster), run: {replace}"
                )
            if going.over or absent.held_for(found is None and not listed) >= JOB_CREATION:
                raise JobNotCreated(
                    f"the Job {namespace}/{job} of this update was not created (its own error says why, or the "
                    "update was cancelled), so there was nothing to guard; the next `pulumi up` creates both"
                )
            quiet[0] = wait.clock.poll
            continue
        if objects.job_finished(found):
            return f"the Job {namespace}/{job} finished"
        pods = [pod for pod in listed if objects.job_uid(pod) == found.metadata.uid]
        if len([pod for pod in pods if objects.started(pod)]) >= size:
            return f"all {size} pods of the Job {namespace}/{job} started"
        cannot, reason = objects.held_back(pods)
        if not reason and len(pods) < size:
            cannot, reason = "be created", _not_created(api_client, namespace, found.metadata.uid)
        quiet[0] = wait.clock.poll if len(pods) < size else watching.IDLE_LOOK
        if wait.held_for(bool(reason)) >= schedule_timeout:
            held = f"its pods could not {cannot} for {schedule_timeout:g}s (minicluster:scheduleTimeout)"
            api_calls.patch(api_client, api_calls.jobs(namespace, job), stop_now(held))
            gang_held = (
                f" (the {gang} gang scheduler places all {size} at once or none: the cluster has no room for the "
                "whole gang)" if gang and cannot == "be scheduled" else ""
            )  # fmt: skip
            raise HeldBack(
                f"the Job's {held.removeprefix('its ')}: {reason}{gang_held}. The Job was stopped "
                "(activeDeadlineSeconds) so that `pulumi up` ends now rather than after jobTimeout. A fix in the "
                f"stack config replaces the Job; after any other fix ({OTHER_FIXES[cannot]}), run: {replace}"
            )
        if wait.over:
            return (
                f"not every pod of the Job {namespace}/{job} started within {job_timeout:g}s (minicluster:jobTimeout)"
            )
    raise AssertionError("watching.pods never ends")


def _not_created(api_client: Any, namespace: str, job_uid: str) -> str:
    """Why the Job controller could not create pods (e.g. a quota), from the Job's latest event: this
    Job's (its uid), not a replaced one's of the same name, whose events Kubernetes keeps for an hour."""
    query = {"fieldSelector": f"involvedObject.uid={job_uid}"}
    events = api_calls.get(api_client, api_calls.events(namespace), query).items
    failed = [event for event in events or [] if event.reason == "FailedCreate"]
    return f"FailedCreate: {failed[-1].message}" if failed else ""
