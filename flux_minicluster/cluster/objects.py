"""What the objects the API server returns say: a broker pod's rank, a Job's size and end, a pod's
exit code and why it waits for a node; and the label selector the list calls take. Pure: it reads the
`kubernetes` client's models, it asks for nothing."""

from __future__ import annotations

from typing import Any


def label_selector(labels: dict[str, str]) -> str:
    """A label selector for the API's list calls: every label, as key=value."""
    return ",".join(f"{key}={value}" for key, value in labels.items())


def pod_rank(pod: Any) -> int:
    """A broker pod's rank: its Indexed Job index (a label since Kubernetes 1.28; the floor is 1.29); -1 if none."""
    from flux_minicluster.builders.names import INDEX_LABEL

    value = (pod.metadata.labels or {}).get(INDEX_LABEL)
    return int(value) if value is not None else -1


def job_uid(pod: Any) -> str | None:
    """The uid of the Job that made the pod (its label), or None."""
    from flux_minicluster.builders.names import JOB_UID_LABEL

    return (pod.metadata.labels or {}).get(JOB_UID_LABEL)


def job_condition(job: Any, types: tuple[str, ...]) -> Any:
    """The Job's first true condition of one of `types`, or None."""
    conditions = (job.status.conditions if job.status else None) or []
    return next((c for c in conditions if c.status == "True" and c.type in types), None)


def job_finished(job: Any) -> str:
    """ "completed" or "failed (<reason>: <message>)" once the Job is over; "" while it runs. A Job that is
    to fail is over too: Kubernetes (1.31 and newer) marks it FailureTarget, with the reason, then deletes
    its pods, and marks it Failed only after, a change that no pod's change follows to wake a watch."""
    condition = job_condition(job, ("Complete", "Failed", "FailureTarget"))
    if condition is None:
        return ""
    if condition.type == "Complete":
        return "completed"
    return f"failed ({': '.join(part for part in (condition.reason, condition.message) if part)})"


def job_size(job: Any) -> int | None:
    """An Indexed Job's size: its completions (a resize changes them before the pods follow)."""
    return int(job.spec.completions) if job.spec is not None and job.spec.completions else None


def exit_code(container_status: Any) -> int | None:
    """A container's exit code once it has terminated (its current state, not a previous run's)."""
    state = container_status.state if container_status is not None else None
    terminated = state.terminated if state is not None else None
    return int(terminated.exit_code) if terminated is not None else None


def not_scheduled(status: Any) -> str:
    """Why the scheduler has not placed a pod ("Unschedulable: 0/3 nodes are available: ..."), from its
    PodScheduled condition; "" once it is placed, or before the scheduler has looked at it."""
    for condition in (status.conditions if status is not None else None) or []:
        if condition.type == "PodScheduled" and condition.status == "False":
            return ": ".join(part for part in (condition.reason, condition.message) if part)
    return ""


def unschedulable(status: Any) -> str:
    """The same, only when the scheduler found no node for it (not, e.g., a scheduling gate held on purpose)."""
    why = not_scheduled(status)
    return why if why.startswith("Unschedulable") else ""
