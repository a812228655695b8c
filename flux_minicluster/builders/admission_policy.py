"""The bounds of the autoscaler's patches (autoscale.admissionPolicy): RBAC lets its account patch its
own Job and scale ConfigMap, but cannot say which fields. A ValidatingAdmissionPolicy (Kubernetes 1.30+)
and its binding let that account change only the Job's parallelism and completions, equal and within
minSize..maxSize, the scale ConfigMap's size data, and the resize lease annotation; the API server
refuses anything else with a message that names the MiniCluster. Pure; the scale ConfigMap's name is a
parameter (an Output in Pulumi)."""

from __future__ import annotations

from typing import Any

from flux_minicluster.builders.autoscaling import service_account_name
from flux_minicluster.builders.names import admission_policy_name, labels
from flux_minicluster.config import sizing
from flux_minicluster.config.spec import MiniClusterSpec

Manifest = dict[str, Any]
API = "admissionregistration.k8s.io/v1"
JOB_FIELDS_KEPT = (
    "activeDeadlineSeconds", "backoffLimit", "backoffLimitPerIndex", "completionMode", "managedBy", "manualSelector",
    "maxFailedIndexes", "podFailurePolicy", "podReplacementPolicy", "selector", "successPolicy", "suspend",
    "template", "ttlSecondsAfterFinished",
)  # fmt: skip
"""Every field of a Job's spec (Kubernetes 1.30 to 1.37) but the two a resize changes."""
METADATA_KEPT = ("labels", "finalizers", "ownerReferences")
CONFIG_MAP_KEPT = ("binaryData", "immutable")
SIZE_KEYS = ("size", "quorum")
"""The scale ConfigMap's keys that a resize writes (config/sizing.py: scale_files)."""


def objects(spec: MiniClusterSpec, scale_config: Any) -> list[Manifest]:
    """The policy and its binding; none unless autoscale.admissionPolicy."""
    if not (spec.autoscale.enabled and spec.autoscale.admission_policy):
        return []
    name = admission_policy_name(spec)
    metadata = {"name": name, "labels": labels(spec, "autoscaler")}
    policy = {
        "apiVersion": API, "kind": "ValidatingAdmissionPolicy", "metadata": metadata,
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": spec.namespace}},
                "resourceRules": [
                    _rule("batch", "jobs", spec.name),
                    _rule("", "configmaps", scale_config),
                ],
            },
            "matchConditions": [{"name": "the-autoscalers-account", "expression": _is_account(spec)}],
            "variables": [
                {"name": "annotations", "expression": _or_empty("object.metadata", "annotations")},
                {"name": "oldAnnotations", "expression": _or_empty("oldObject.metadata", "annotations")},
                {"name": "data", "expression": _or_empty("object", "data")},
                {"name": "oldData", "expression": _or_empty("oldObject", "data")},
            ],
            "validations": validations(spec),
        },
    }  # fmt: skip
    binding = {
        "apiVersion": API, "kind": "ValidatingAdmissionPolicyBinding", "metadata": metadata,
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }  # fmt: skip
    return [policy, binding]


def validations(spec: MiniClusterSpec) -> list[Manifest]:
    """Each rule with its own message: what the account may do, for the kind it concerns."""
    smallest, largest = sizing.smallest_size(spec.min_size), spec.largest_size
    who = f"MiniCluster {spec.namespace}/{spec.name}: its autoscaler's account may"
    job_kept = [_same("spec", field) for field in JOB_FIELDS_KEPT] + [_same("metadata", f) for f in METADATA_KEPT]
    job_kept.append(_same_except("variables.annotations", "variables.oldAnnotations", (sizing.RESIZING,)))
    size = "object.spec.completions"
    sized = [f"object.spec.parallelism == {size}", f"{size} >= {smallest}", f"{size} <= {largest}"]
    map_kept = [_same("metadata", field) for field in (*METADATA_KEPT, "annotations")]
    map_kept += [_same("object", field, old="oldObject") for field in CONFIG_MAP_KEPT]
    map_kept.append(_same_except("variables.data", "variables.oldData", SIZE_KEYS))
    map_size = "int(variables.data['size'])"
    map_sized = ["'size' in variables.data", f"{map_size} >= {smallest}", f"{map_size} <= {largest}"]
    return [
        _validation("jobs", job_kept, f"{who} change only the Job's parallelism and completions and the resize "
                                      f"lease annotation ({sizing.RESIZING})"),
        _validation("jobs", sized, f"{who} size the Job only within {smallest}..{largest} brokers (minSize.."
                                   "maxSize), with parallelism equal to completions"),
        _validation("configmaps", map_kept, f"{who} change only the scale ConfigMap's size data "
                                            f"({', '.join(SIZE_KEYS)})"),
        _validation("configmaps", map_sized, f"{who} set the scale ConfigMap's size only within "
                                             f"{smallest}..{largest} brokers (minSize..maxSize)"),
    ]  # fmt: skip


def _rule(group: str, resource: str, name: Any) -> Manifest:
    return {"apiGroups": [group], "apiVersions": ["v1"], "resources": [resource], "operations": ["UPDATE"],
            "resourceNames": [name]}  # fmt: skip


def _is_account(spec: MiniClusterSpec) -> str:
    return f"request.userInfo.username == 'system:serviceaccount:{spec.namespace}:{service_account_name(spec)}'"


def _validation(resource: str, conditions: list[str], message: str) -> Manifest:
    """A rule for one kind: the request is of another kind, or every condition holds."""
    either = " && ".join(f"({condition})" for condition in conditions)
    return {"expression": f"request.resource.resource != '{resource}' || ({either})", "message": message}


def _same(path: str, field: str, old: str = "oldObject") -> str:
    """The field is as it was: both lack it, or both have the same value."""
    new_path = path if path.startswith("object") else f"object.{path}"
    old_path = f"{old}{new_path.removeprefix('object')}"
    new, was = f"{new_path}.{field}", f"{old_path}.{field}"
    return f"has({new}) == has({was}) && (!has({new}) || {new} == {was})"


def _same_except(new: str, old: str, keys: tuple[str, ...]) -> str:
    """Two string maps agree on every key but `keys`: none added, removed or changed."""
    free = "[" + ", ".join(f"'{key}'" for key in keys) + "]"
    return (f"{new}.all(k, k in {free} || (k in {old} && {old}[k] == {new}[k])) && "
            f"{old}.all(k, k in {free} || k in {new})")  # fmt: skip


def _or_empty(path: str, field: str) -> str:
    return f"has({path}.{field}) ? {path}.{field} : {{}}"
