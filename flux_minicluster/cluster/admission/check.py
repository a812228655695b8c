"""The admission check: does the MiniCluster fit the cluster as it is, before anything is created?

First every object goes to the API server as a dry run (dry_run.py): what it refuses stops
`pulumi up` whatever minicluster:admission says but off, a Job that Kueue admits included. Then
(unless Kueue judges the room) it reads the cluster with the `kubernetes` client on the same context
as the keygen provider (one paginated list of nodes, one of the pods that hold resources, the
namespace's quotas, as raw JSON: decoding 100 000 pods into client models would take longer than the
check), sends one broker pod through the namespace's real admission (LimitRanges, quotas, webhooks)
as a server-side dry run (these four side by side), judges with fit.py, and answers per
`minicluster:admission`: refuse, warn or off.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from flux_minicluster.builders import keeper, keygen, names, pod_template
from flux_minicluster.cluster import api_calls, kube
from flux_minicluster.cluster.admission import dry_run, fit
from flux_minicluster.config.notices import KUEUE_QUEUE
from flux_minicluster.config.spec import MiniClusterSpec

PAGE = 500
HOLDING_RESOURCES = "status.phase!=Succeeded,status.phase!=Failed"
NODE_RIGHTS = "list on nodes and pods at the cluster scope"


@dataclass(frozen=True)
class Verdict:
    refused: str | None = None
    """The message to stop `pulumi up` with (admission: refuse, and it does not fit)."""
    warnings: list[str] = field(default_factory=list)
    """What to tell the user and go ahead with."""


def check(spec: MiniClusterSpec, access: kube.Access, owner: str, *, preview: bool = False) -> Verdict:
    """`access`: the cluster the Kubernetes provider is given. `owner`: the stack that declares the
    MiniCluster (names.OWNER): the objects of its names that exist already must be its own. In a
    `preview`, a namespace that does not exist yet is no refusal: the program may make it."""
    if spec.admission == "off":
        return Verdict()
    pod = broker_pod(spec)
    try:
        api_client = access.client()
    except kube.CredentialsFailed as error:  # nothing could be created: the Kubernetes provider fails too
        return Verdict(refused=f"{error}.\nNothing was created.")
    except kube.NoCluster as error:
        return Verdict(warnings=[f"admission check skipped: {error}"])
    warnings = []
    try:
        kept = [keeper.pod(spec)] if spec.keeper.enabled else []
        found = dry_run.judged(api_client, spec, [pod, keygen.keygen_pod(spec), *kept], owner)
    except dry_run.Skipped as skipped:
        if skipped.unreachable:  # the room cannot be read either: one warning, and no second wait for it
            return Verdict(warnings=[f"admission check skipped: {skipped}"])
        found, warnings = dry_run.Judged([], []), [f"dry run skipped: {skipped}"]
    if found.no_namespace and preview:
        return Verdict(warnings=[*warnings, _namespace_to_come(spec)])
    warnings += [f"admission check: {line}" for line in found.doubts]
    if found.finished and spec.persistent:
        warnings.append(_not_running(spec, found.finished))
    if found.missing and preview:  # the program may make them, as it may make the namespace
        warnings += [
            f"admission check left to `pulumi up`: {line} yet. If this program makes it, `pulumi up` looks again; if "
            "not, `pulumi up` refuses the MiniCluster before anything is created" for line in found.missing
        ]  # fmt: skip
        found = dataclasses.replace(found, missing=[])
    if found.refused or found.taken or found.missing:
        return Verdict(refused=_dry_run_refusal(spec, found, owner))
    queue = spec.job_labels.get(KUEUE_QUEUE)
    if queue and spec.suspend:  # the room is Kueue's to judge; what the API server refuses is not
        return Verdict(
            warnings=[*warnings, f"admission: left to Kueue (queue {queue!r}), which admits the Job when there is room"]
        )
    try:
        snapshot = read(api_client, spec.namespace, pod)
    except Exception as error:
        said = kube.describe(
            kube.problem(error), doing="reading the cluster's room", namespace=spec.namespace,
            needs="list on nodes, pods and resourcequotas, and create on pods (a dry run)",
        )  # fmt: skip
        return Verdict(warnings=[*warnings, f"admission check skipped: {said}"])
    if snapshot.unseen:
        warnings.append(
            f"admission check of the nodes' room skipped (the namespace's quotas were checked): {snapshot.unseen}"
        )
    problems = fit.problems(shape(spec, pod), snapshot)
    if not problems:
        return Verdict(warnings=[*warnings, *_autoscaler_room(spec, pod, snapshot)])
    text = f"MiniCluster {spec.name!r} does not fit the cluster as it is:\n" + "\n".join(f"  - {p}" for p in problems)
    if spec.scheduler is not None:  # the gang scheduler decides where, but it needs this room all at once
        text += (
            f"\nThe {spec.scheduler.gang} gang scheduler places all {spec.size} brokers at once or none: none "
            "starts until there is room for every one."
        )
    if spec.admission == "refuse":
        return Verdict(refused=f"{text}\nNothing was created (minicluster:admission is refuse).")
    return Verdict(
        warnings=[*warnings, f"{text}\nGoing ahead (minicluster:admission is warn): a cluster autoscaler may add room."]
    )


def _autoscaler_room(spec: MiniClusterSpec, pod: dict[str, Any], snapshot: Any) -> list[str]:
    """Never a refusal: the room for maxSize brokers, which the autoscaler may grow to (a grow that finds
    no room is rolled back after scheduleTimeout; a cluster autoscaler may add the room meanwhile)."""
    if not spec.autoscale.enabled:
        return []
    problems = fit.problems(shape(spec, pod, spec.largest_size), snapshot)
    if not problems:
        return []
    lines = "\n".join(f"  - {problem}" for problem in problems)
    return [
        f"MiniCluster {spec.name!r} fits at size {spec.size} but not at maxSize ({spec.largest_size}), which the "
        f"autoscaler may grow it to:\n{lines}\nA grow that finds no room within scheduleTimeout "
        f"({spec.schedule_timeout}s) is rolled back."
    ]


def broker_pod(spec: MiniClusterSpec) -> dict[str, Any]:
    """One broker pod as the Job asks for it: the very pod template the Job carries, with the names
    its objects will have."""
    template = pod_template.broker_pod(
        spec, service_name=spec.service, secret_name=names.curve_secret_name(spec),
        broker_config=names.broker_config_name(spec), entrypoint=names.entrypoint_name(spec),
        scale_config=names.scale_config_name(spec), config_secret=names.config_secret_name(spec),
        pod_group=names.pod_group_name(spec),
    )  # fmt: skip
    metadata = {**template["metadata"], "name": f"{spec.name}-admission", "namespace": spec.namespace}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}


def shape(spec: MiniClusterSpec, pod: dict[str, Any], size: int | None = None) -> fit.Shape:
    """`size` (default: the stack's) of `pod` (broker_pod's), as the scheduler is asked to place them,
    with the keeper's pod beside them if it has one."""
    kept = keeper.pod(spec)["spec"] if spec.keeper.enabled else None
    return fit.Shape(size or spec.size, pod["spec"], spec.pod.one_pod_per_node, spec.namespace, spec.name, kept)


def _not_running(spec: MiniClusterSpec, finished: str) -> str:
    """A persistent instance whose Job is over: `pulumi up` leaves a finished Job as it is, so without
    this it said nothing, and the stack looked up while no broker ran."""
    return (
        f"MiniCluster {spec.name!r} is not running: its Job has {finished}, so its instance ended (`flux "
        "shutdown`, or rank 0's broker exited). `pulumi up` leaves a finished Job as it is, unless a change "
        "replaces it (`pulumi preview` says so). To start the instance anew, set minicluster:rerun to a new "
        "number (`pulumi config set minicluster:rerun N`); a stateVolume keeps its queue"
    )


def _namespace_to_come(spec: MiniClusterSpec) -> str:
    """A preview of a program that makes the namespace itself (a Namespace resource whose name the
    MiniCluster takes): nothing in it can be judged before it exists."""
    return (
        f"admission check left to `pulumi up`: namespace {spec.namespace!r} does not exist yet. If this program "
        "makes it, `pulumi up` checks the MiniCluster once it is there; if not, `pulumi up` refuses it before "
        "anything is created (create the namespace, or set minicluster:namespace)"
    )


def _dry_run_refusal(spec: MiniClusterSpec, found: dry_run.Judged, owner: str) -> str:
    said = []
    if found.refused:
        said += [f"the API server refuses MiniCluster {spec.name!r} (a dry run):", *(f"  - {x}" for x in found.refused)]
    if found.missing:
        said += [
            f"MiniCluster {spec.name!r} names what does not exist, and its pods cannot start without it (create "
            "each, or change the key that names it):", *(f"  - {x}" for x in found.missing),
        ]  # fmt: skip
    if found.taken:
        said += [
            f"objects that MiniCluster {spec.name!r} would create are in namespace {spec.namespace!r} already, and "
            "not this stack's:", *(f"  - {line}" for line in found.taken),
            "pulumi-kubernetes creates by server-side apply: it would take each over, and this stack's `pulumi "
            "destroy` delete it. Give this MiniCluster names of its own by the key named, or another "
            "minicluster:namespace.",
        ]  # fmt: skip
        said += _renamed_from(found.taken_by, owner)
    return "\n".join([*said, "Nothing was created."])


def _renamed_from(taken_by: list[str], owner: str) -> list[str]:
    """`pulumi stack rename` of a stack whose MiniCluster keeps its own name: its objects still name the
    old stack, and the program cannot tell a renamed stack from another one of the same project."""
    project = owner.rsplit("/", 1)[0] + "/"
    if len(taken_by) != 1 or not taken_by[0].startswith(project):
        return []
    return [
        f"If this stack was renamed from {taken_by[0].removeprefix(project)!r} (`pulumi stack rename`), they are "
        "its own: one `pulumi up` with minicluster:admission off marks them as this stack's (then set it back)."
    ]


def read(
    api_client: Any, namespace: str, pod: dict[str, Any], request_timeout: tuple[float, float] = kube.REQUEST_TIMEOUT
) -> fit.Snapshot:
    def pages(path: str, **query: Any) -> Callable[[], list[dict[str, Any]]]:
        return lambda: list(_items(api_client, path, request_timeout, **query))

    asked: list[Callable[[], Any]] = [
        lambda: _dry_run(api_client, namespace, pod, request_timeout),
        pages(api_calls.path("v1", "resourcequotas", namespace)),
        pages("/api/v1/nodes"),
        pages("/api/v1/pods", fieldSelector=HOLDING_RESOURCES),
    ]  # side by side: four round trips to a remote API server cost one
    answers = api_calls.together(asked)
    (admitted, refusal), quotas = (api_calls.result(answer) for answer in answers[:2])
    denied = next((answer for answer in answers[2:] if _denied(answer)), None)
    if denied is None:
        nodes, pods = (api_calls.result(answer) for answer in answers[2:])
        return fit.Snapshot(nodes=nodes, pods=pods, quotas=quotas, admitted=admitted, refusal=refusal)
    # A user of one namespace: its quotas are still judged, against its own pods there
    own = pages(api_calls.path("v1", "pods", namespace), fieldSelector=HOLDING_RESOURCES)()
    unseen = kube.describe(
        kube.problem(denied), doing="reading the nodes and every namespace's pods", needs=NODE_RIGHTS
    )
    return fit.Snapshot(nodes=None, pods=own, quotas=quotas, admitted=admitted, refusal=refusal, unseen=unseen)


def _denied(answer: Any) -> bool:
    return isinstance(answer, Exception) and kube.problem(answer).kind == "denied"


def _dry_run(api_client: Any, namespace: str, pod: dict[str, Any], timeout: tuple[float, float]) -> tuple[Any, str]:
    """The namespace's real admission for one broker pod (dryRun=All: nothing is stored): the pod as
    LimitRange defaulting made it, or the API server's reason for refusing it."""
    try:
        path = api_calls.path("v1", "pods", namespace)
        return api_calls.request(api_client, "POST", path, {"dryRun": "All"}, pod, timeout), ""
    except Exception as error:
        found, refused = kube.problem(error), f'pods "{pod["metadata"]["name"]}" is forbidden: '
        if "does not support dry run" in found.detail:  # a webhook with side effects: judge the pod as built
            return pod, ""
        if found.kind == "rejected" or refused in found.detail:  # admission said no; RBAC names a User instead
            return None, found.detail.removeprefix(refused)
        raise


def _items(api_client: Any, path: str, timeout: tuple[float, float], **query: Any) -> Iterator[dict[str, Any]]:
    token: str | None = None
    while True:
        page = api_calls.request(api_client, "GET", path, {**query, "limit": PAGE, "continue": token}, timeout=timeout)
        yield from page.get("items") or []
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return
