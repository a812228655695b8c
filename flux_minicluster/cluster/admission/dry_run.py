"""Every object `pulumi up` would create, sent to the API server as a server-side dry run (dryRun=All)
before anything is created. Its validation, its admission (policy webhooks, quotas on object counts)
and its API (is a gang's PodGroup kind installed?) judge each object; nothing is stored. The config
checks refuse what they know Kubernetes refuses; this asks the cluster itself.

The pods go too: one broker pod as the Job asks for it, the keygen pod, and the keeper's pod. An
admission policy that refuses them (Pod Security, a validating webhook, Kyverno, Gatekeeper) judges a
workload's pods only when they are created, after the Job was: here it stops `pulumi up` first. What
else refuses a pod (a LimitRange, a quota) is a matter of room, left to the admission check.

An object that exists already is Pulumi's to update when this stack made it (a later `pulumi up`): its
annotation names the stack (names.OWNER). One that another stack made, or no Pulumi stack (a
flux-operator's, a `kubectl apply` of render.py's), is refused by name: pulumi-kubernetes 4.25 creates
by server-side apply, which would take it over (a Service of the same fields, silently), and this
stack's `pulumi destroy` would delete it. Objects that Pulumi made before they carried their stack pass,
as this stack's: their field manager is Pulumi's, which of its stacks cannot be told.

Secret values are never sent: placeholders stand in for them. Each problem is said once, in the
objects' order, though the dry runs are sent side by side (each waits for the API server).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from flux_minicluster.builders import keygen, manifests, names, rendering
from flux_minicluster.cluster import api_calls, kube
from flux_minicluster.cluster.admission import references
from flux_minicluster.cluster.objects import job_finished
from flux_minicluster.config.spec import MiniClusterSpec

PLURALS = {
    "Secret": "secrets", "ConfigMap": "configmaps", "Service": "services", "Job": "jobs", "Pod": "pods",
    "ServiceAccount": "serviceaccounts", "Role": "roles", "RoleBinding": "rolebindings",
    "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
    "PodGroup": "podgroups", "ServiceMonitor": "servicemonitors", "Deployment": "deployments",
}  # fmt: skip
"""Every kind the program creates, by its resource's name in the API's paths."""
CUSTOM = {"PodGroup", "ServiceMonitor"}
"""The kinds a CRD brings (the gang scheduler's, the Prometheus Operator's): a cluster may lack them."""
CLUSTER_SCOPED = {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
"""autoscale.admissionPolicy's objects: they need a cluster of 1.30 or newer, and rights beyond the namespace."""
RESTRICTED_FITS = (
    "the namespace enforces a Pod Security Standard: minicluster:securityProfile restricted makes every pod "
    "the MiniCluster creates satisfy the restricted one"
)
PLACEHOLDER_CERTIFICATE = "(not sent: a dry run judges the Secret, not its key)"
PULUMI_FIELD_MANAGER = "pulumi-kubernetes-"
"""How the field manager of every server-side apply by pulumi-kubernetes starts (a random suffix per
resource): an object whose fields one of them applied was made by Pulumi."""
NAMESPACE_GOING = "unable to create new content in namespace {} because it is being terminated"
"""How the API server's NamespaceLifecycle admission refuses any object in a namespace being deleted (403)."""
RBAC_DENIAL = "cannot create resource"
"""In the RBAC authorizer's refusal ('User "u" cannot create resource "jobs" ...'): a refusal of the
user, not of the object."""


class Skipped(RuntimeError):
    """The dry run could not judge the objects (no access, no answer): the message says why."""

    unreachable: bool
    """No answer from the cluster at all: nothing else the check would read can be read either."""

    def __init__(self, said: str, *, unreachable: bool = False) -> None:
        super().__init__(said)
        self.unreachable = unreachable


@dataclass(frozen=True)
class Judged:
    """What the dry run found, one line per problem, each said once, in the objects' order."""

    refused: list[str]
    """Why the API server would refuse objects of this MiniCluster, or an admission policy its pods."""
    taken: list[str]
    """The objects of the names this MiniCluster keeps that are there already, made by another stack or by
    no Pulumi stack."""
    no_namespace: bool = False
    """The namespace does not exist (yet): the API server judged nothing in it."""
    missing: list[str] = dataclasses.field(default_factory=list)
    """What the pods name that is not there (references.py): a Secret a volume mounts, a key of a Secret a
    container's environment reads, the pods' PriorityClass, RuntimeClass or ServiceAccount."""
    doubts: list[str] = dataclasses.field(default_factory=list)
    """Warnings of what the pods name: what could not be looked for, and why; a pull Secret not there."""
    finished: str = ""
    """This stack's Job, when it is there already and over: how it ended (objects.job_finished)."""
    taken_by: list[str] = dataclasses.field(default_factory=list)
    """The stacks that made the objects in `taken`, each once (none for objects no stack made)."""


def judged(
    api_client: Any, spec: MiniClusterSpec, pods: list[manifests.Manifest], owner: str,
    timeout: tuple[float, float] = kube.REQUEST_TIMEOUT,
) -> Judged:  # fmt: skip
    """The objects of this MiniCluster and its `pods` as the API server and the stack `owner` judge
    them (no problem: it takes them all). Raises Skipped when it cannot tell."""
    objects = [rendering.without_secret_values(obj) for obj in manifests.all_objects(spec, PLACEHOLDER_CERTIFICATE)]
    refused: dict[str, None] = {}  # a dict, as an ordered set: a missing namespace refuses every object alike
    absent: dict[str, None] = {}  # what the sample pods name that is not there, as admission found it
    taken: list[str] = []
    taken_by: list[str] = []
    finished = ""
    sent = [*objects, *pods]
    named = references.references(spec)
    looks = list(dict.fromkeys(reference.path(spec.namespace) for reference in named))  # each object once
    answers = api_calls.together(
        [functools.partial(_create, api_client, obj, timeout) for obj in sent]
        + [functools.partial(api_calls.existing, api_client, path, timeout) for path in looks]
    )  # fmt: skip
    for obj, answer in zip(sent, answers[: len(sent)], strict=True):
        if isinstance(answer, Exception):
            found = kube.problem(answer)
            if obj["kind"] == "Pod" and (not_there := references.refused_pod_names(spec, found.detail)):
                absent[not_there] = None
            else:
                refused.update(dict.fromkeys(filter(None, [_refusal(obj, found, spec)])))
        elif answer is not None:
            if not_ours := _taken(obj, answer, owner, spec):
                taken.append(not_ours)
                taken_by.extend(filter(None, [(answer.metadata.annotations or {}).get(names.OWNER)]))
            elif obj["kind"] == "Job" and _was_elastic(answer) and not _run_again(obj, answer):
                finished = job_finished(answer)
    if any(kube.POD_SECURITY in line for line in refused) and not spec.restricted:
        refused[RESTRICTED_FITS] = None
    if refused.keys() & {_no_namespace(spec), _namespace_going(spec)}:  # nothing can be made in it: the one problem
        return Judged(list(refused), taken, no_namespace=_no_namespace(spec) in refused)
    missing, doubts = references.judged(spec.namespace, named, dict(zip(looks, answers[len(sent) :], strict=True)))
    return Judged(
        list(refused), taken, missing=[*missing, *absent], doubts=doubts, finished=finished,
        taken_by=list(dict.fromkeys(taken_by)),
    )  # fmt: skip


def _create(api_client: Any, obj: manifests.Manifest, timeout: tuple[float, float]) -> Any | None:
    """None: the API server would create the object. An object that keeps its name (not one that Pulumi
    names anew, nor a pod: the pods sent are samples) and exists already: that object as it is (a View)."""
    namespace = None if obj["kind"] in CLUSTER_SCOPED else obj["metadata"]["namespace"]
    path = api_calls.path(obj["apiVersion"], PLURALS[obj["kind"]], namespace)
    try:
        api_calls.request(api_client, "POST", path, {"dryRun": "All"}, obj, timeout)
    except Exception as error:
        name, kind = obj["metadata"].get("name"), obj["kind"]
        if kind == "Pod" or kind in names.AUTO_NAMED_KINDS or kube.problem(error).kind != "conflict":
            raise
        return api_calls.existing(api_client, f"{path}/{name}", timeout)  # None: deleted since
    return None


def _taken(obj: manifests.Manifest, there: Any, owner: str, spec: MiniClusterSpec) -> str | None:
    """Why the object of this name that is `there` is not the stack `owner`'s to update, or None."""
    made_by = (there.metadata.annotations or {}).get(names.OWNER)
    managers = [field.manager or "" for field in there.metadata.managed_fields or []]
    if made_by == owner or (made_by is None and any(m.startswith(PULUMI_FIELD_MANAGER) for m in managers)):
        return None
    own_service = obj["kind"] in ("Service", "ServiceMonitor") and obj["metadata"]["name"] == spec.service
    key = "minicluster:serviceName" if own_service and spec.service_name else "minicluster:name"
    listed = f" (its field managers: {', '.join(managers)})" if managers else ""
    whose = f"Pulumi stack {made_by!r}" if made_by else f"no Pulumi stack{listed}"
    going = ", and being deleted: once it is gone the name is free" if there.metadata.deletion_timestamp else ""
    return f"the {obj['kind']} {obj['metadata']['name']!r} ({key}), made by {whose}{going}"


def _was_elastic(there: Any) -> bool:
    """Whether the Job that is there was an elastic one (not awaited: builders.manifests), whose end is
    its instance's; a one-shot command's Job ends as it should, whatever this `pulumi up` makes of it."""
    return (there.metadata.annotations or {}).get(names.SKIP_AWAIT) == "true"


def _run_again(job: manifests.Manifest, there: Any) -> bool:
    """Whether `pulumi up` replaces the Job that is `there` for minicluster:rerun (names.RERUN), which is
    what to do once it is over; other changes that replace it wait for the ConfigMaps' names to be known."""
    wanted = (job["spec"]["template"]["metadata"].get("annotations") or {}).get(names.RERUN)
    template = there.spec.template if there.spec is not None else None
    live = (template.metadata.annotations if template is not None and template.metadata is not None else None) or {}
    return bool(wanted != live.get(names.RERUN))


def _refusal(obj: manifests.Manifest, found: kube.ApiProblem, spec: MiniClusterSpec) -> str | None:
    metadata = obj["metadata"]
    what = f"the {obj['kind']} {metadata.get('name') or metadata['generateName'] + '*'!r}"
    if found.kind == "conflict":  # the name of a sample pod, or one that Pulumi does not use
        return None
    if obj["kind"] in CLUSTER_SCOPED:
        return _policy_problem(obj, found)
    if found.kind == "not-found" and f'namespaces "{spec.namespace}" not found' in found.detail:
        return _no_namespace(spec)
    if found.kind == "denied" and NAMESPACE_GOING.format(spec.namespace) in found.detail:
        return _namespace_going(spec)
    if found.kind == "not-found" and obj["kind"] in CUSTOM:
        what_to_do = (
            f"install {spec.scheduler.gang if spec.scheduler else 'it'}, or unset minicluster:scheduler"
            if obj["kind"] == "PodGroup"
            else "install the Prometheus Operator, or set minicluster:metrics.serviceMonitor to false"
        )
        return f"the cluster has no {obj['kind']} of {obj['apiVersion']} (its CRD is not installed): {what_to_do}"
    if obj["kind"] == "Pod":
        return _policy_refusal(obj, found, spec) if kube.by_policy(found) else None
    if found.kind == "rejected" or (found.kind == "denied" and RBAC_DENIAL not in found.detail):
        return f"{what}: {found.detail}"
    needs = "create (a dry run) on what the MiniCluster creates"
    said = kube.describe(found, doing=f"sending {what} as a dry run", namespace=spec.namespace, needs=needs)
    raise Skipped(said, unreachable=found.kind == "unreachable")


def _no_namespace(spec: MiniClusterSpec) -> str:
    """The refusal of every object in a namespace that does not exist, said once (Judged.no_namespace)."""
    return f"namespace {spec.namespace!r} does not exist: create it, or set minicluster:namespace"


def _namespace_going(spec: MiniClusterSpec) -> str:
    """The refusal of every object in a namespace being deleted, said once."""
    return (
        f"namespace {spec.namespace!r} is being deleted, and the API server takes nothing new in it: once it is "
        "gone, create it again, or set minicluster:namespace"
    )


def _policy_refusal(obj: manifests.Manifest, found: kube.ApiProblem, spec: MiniClusterSpec) -> str:
    """An admission policy refuses pods of the MiniCluster: no autoscaler adds room for that."""
    containers = [container["name"] for container in obj["spec"]["containers"]]
    which = ("the keygen pod" if keygen.KEYGEN_CONTAINER in containers
             else "the keeper's pod (minicluster:keeper.enabled)" if names.KEEPER_CONTAINER in containers
             else "the broker pods")  # fmt: skip
    return f"an admission policy of namespace {spec.namespace!r} refuses {which}: {found.detail}"


def _policy_problem(obj: manifests.Manifest, found: kube.ApiProblem) -> str:
    """autoscale.admissionPolicy on a cluster that cannot take it, or for a user who may not create it."""
    key = "minicluster:autoscale.admissionPolicy"
    if found.kind == "not-found":
        return (f"{key}: the cluster has no {obj['kind']} of {obj['apiVersion']} (Kubernetes 1.30 or newer has it): "
                f"upgrade the cluster, or unset {key}")  # fmt: skip
    if found.kind == "denied":
        return (f"{key}: the {obj['kind']} is cluster-scoped, and creating it is refused: {found.detail}; ask the "
                f"cluster's admin for that right, or unset {key}")  # fmt: skip
    return f"{key}: the {obj['kind']} {obj['metadata']['name']!r}: {found.detail}"
