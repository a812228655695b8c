"""What the objects the API server returns say: a broker pod's rank, a Job's size and end, a pod's
exit code, why it waits for a node and why it cannot start; and the label selector the list calls
take. Pure: it reads the `kubernetes` client's models, it asks for nothing."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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


PULL_FAILURES = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})
"""The kubelet's reasons for a container that waits on an image it cannot pull."""
CREATE_FAILURES = frozenset({"CreateContainerConfigError", "CreateContainerError"})
"""Its reasons for a container it cannot make: a ConfigMap or Secret key that the container's
environment names is missing, or the runtime refused the container."""
PULL_ADVICE = "check the image's name and tag, and minicluster:pod.imagePullSecrets"


def image_not_pulled(pod: Any) -> str:
    """Why one of a pod's containers waits on an image the kubelet cannot pull, init containers first:
    "container 'x' cannot pull image 'y' (ErrImagePull: ...)"; "" if none does (one still being pulled)."""
    return _waiting_on(pod, PULL_FAILURES)


def container_not_made(pod: Any) -> str:
    """Why the kubelet cannot make one of a pod's containers: "container 'x' cannot be made
    (CreateContainerConfigError: ...)"; "" if it can."""
    return _waiting_on(pod, CREATE_FAILURES)


def _waiting_on(pod: Any, reasons: frozenset[str]) -> str:
    """The first container, init containers first, that waits for one of `reasons`, said in a line."""
    for name, waiting, image in waiting_containers(pod):
        if waiting.reason not in reasons:
            continue
        said = f"{waiting.reason}: {waiting.message or 'no details'}"
        if waiting.reason in PULL_FAILURES:
            return f"container {name!r} cannot pull image {image!r} ({said})"
        return f"container {name!r} cannot be made ({said})"
    return ""


def waiting_containers(pod: Any) -> Iterator[tuple[str, Any, str]]:
    """The pod's containers that wait, init containers first: each one's name, waiting state and image.
    The image is the pod's as given: a status may name it otherwise (normalized), or not at all."""
    spec, status = pod.spec, pod.status
    declared = [*(spec.init_containers or []), *(spec.containers or [])] if spec is not None else []
    images = {container.name: container.image for container in declared}
    statuses = [*(status.init_container_statuses or []), *(status.container_statuses or [])] if status else []
    for container in statuses:
        waiting = container.state.waiting if container.state is not None else None
        if waiting is not None:
            yield container.name, waiting, images.get(container.name) or container.image


def started(pod: Any) -> bool:
    """The pod's containers have started (and may have ended): past Pending, which covers its wait for a
    node, for its images and for its init containers."""
    return pod.status is not None and pod.status.phase in ("Running", "Succeeded", "Failed")


def held_back(pods: Iterable[Any]) -> tuple[str, str]:
    """What keeps pods from running, and why, from the first of them held back: ("be scheduled", the
    scheduler's reason), else ("start", the kubelet's, with what to check for an image); ("", "") when
    nothing does."""
    pods = list(pods)
    if why := next((why for pod in pods if (why := unschedulable(pod.status))), ""):
        return "be scheduled", why
    if why := next((why for pod in pods if (why := image_not_pulled(pod))), ""):
        return "start", f"{why}; {PULL_ADVICE}"
    if why := next((why for pod in pods if (why := container_not_made(pod))), ""):
        return "start", why
    return "", ""
