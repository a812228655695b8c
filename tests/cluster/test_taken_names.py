"""The dry run on names that are taken: an object of a name the MiniCluster keeps (its Job, its
Services, its access objects, ...) that exists already is this stack's to update only when this stack
made it (names.OWNER). pulumi-kubernetes 4.25 creates by server-side apply: it would take another's over,
and this stack's `pulumi destroy` delete it (tests/realengine/node/test_taken_names.py, on the real
engines). The API stand-in answers the dry run's create with the API server's 409 and the object's get as
stored."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.builders.names import OWNER as OWNER_ANNOTATION
from flux_minicluster.cluster import admission
from flux_minicluster.cluster.admission.dry_run import PLURALS
from tests.cluster.test_dry_run import verdict
from tests.conftest import config
from tests.harness import OWNER, deploy, deploy_rejected
from tests.kube_api import Cluster
from tests.kube_api.samples import FOUR
from tests.plain import plain

Json = dict[str, Any]
ANOTHER_STACK = "organization/minicluster/other"


def store(api: Cluster, kind: str, name: str, stack: str | None, manager: str = "pulumi-kubernetes-77885006") -> Json:
    """An object of namespace default that exists, as the API server answers a get of it: its stack's
    annotation (None: none) and the field manager that applied it. Kept where the stand-in keeps its kind."""
    annotations = {} if stack is None else {OWNER_ANNOTATION: stack}
    managed = [{"manager": manager, "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1"}]
    metadata = {"name": name, "namespace": "default", "annotations": annotations, "managedFields": managed}
    obj = {"apiVersion": "v1", "kind": kind, "metadata": metadata}
    if kind == "Job":
        api.jobs[("default", name)] = obj
    else:
        api.existing[(PLURALS[kind], "default", name)] = obj
    return obj


def test_the_objects_this_stack_made_are_its_to_update(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    store(kube_api, "Service", "dev", OWNER)
    store(kube_api, "Job", "dev", OWNER)
    assert verdict() == admission.Verdict()


def test_a_service_another_stack_made_stops_pulumi_up_before_anything_is_created(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    store(kube_api, "Service", "dev", ANOTHER_STACK)
    message, deployment = deploy_rejected(config())
    assert message == (
        "objects that MiniCluster 'dev' would create are in namespace 'default' already, and not this stack's:\n"
        "  - the Service 'dev' (minicluster:name), made by Pulumi stack 'organization/minicluster/other'\n"
        "pulumi-kubernetes creates by server-side apply: it would take each over, and this stack's `pulumi destroy` "
        "delete it. Give this MiniCluster names of its own by the key named, or another minicluster:namespace.\n"
        "If this stack was renamed from 'other' (`pulumi stack rename`), they are its own: one `pulumi up` with "
        "minicluster:admission off marks them as this stack's (then set it back).\n"
        "Nothing was created."
    )
    assert deployment.resources == []


def test_objects_of_another_project_are_not_said_to_be_a_renamed_stacks(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    store(kube_api, "Service", "dev", "organization/other-project/dev")
    message, _ = deploy_rejected(config())
    assert "made by Pulumi stack 'organization/other-project/dev'" in message and "renamed" not in message


def test_a_job_no_pulumi_stack_made_is_refused_with_who_made_it(kube_api: Cluster) -> None:
    """A flux-operator's MiniCluster of the same name, say: its Job is the operator's."""
    kube_api.nodes = FOUR
    store(kube_api, "Job", "dev", None, manager="flux-operator")
    found = verdict()
    assert found.refused is not None
    assert "  - the Job 'dev' (minicluster:name), made by no Pulumi stack (its field managers: flux-operator)\n" in (
        found.refused
    )


def test_objects_pulumi_made_before_they_carried_their_stack_are_taken_as_this_stacks(kube_api: Cluster) -> None:
    """A stack deployed by an earlier release: its next `pulumi up` adds the annotation."""
    kube_api.nodes = FOUR
    store(kube_api, "Service", "dev", None)
    store(kube_api, "Job", "dev", None)
    assert verdict() == admission.Verdict()


def test_a_service_name_of_its_own_is_refused_by_that_key(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    store(kube_api, "Service", "shared", ANOTHER_STACK)
    found = verdict(serviceName="shared")
    assert found.refused is not None
    assert "  - the Service 'shared' (minicluster:serviceName), made by Pulumi stack " in found.refused


def test_the_autoscalers_access_objects_are_judged_too(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    store(kube_api, "RoleBinding", "dev-autoscaler", "x/y/z")
    found = verdict(command=None, size=1, maxSize=4, autoscale={"enabled": True})
    assert found.refused is not None
    assert "  - the RoleBinding 'dev-autoscaler' (minicluster:name), made by Pulumi stack 'x/y/z'\n" in found.refused


def test_a_configmap_of_a_name_pulumi_does_not_use_is_no_problem(kube_api: Cluster) -> None:
    """Pulumi names each ConfigMap and Secret anew (dev-entrypoint-<8 hex>): render.py's names are free."""
    kube_api.nodes = FOUR
    store(kube_api, "ConfigMap", "dev-entrypoint", None, "kubectl")
    assert verdict() == admission.Verdict()
    assert not any(method == "GET" and "/configmaps/" in path for method, path, _ in kube_api.requests)


def test_a_taken_name_is_not_judged_with_admission_off(kube_api: Cluster) -> None:
    """admission: off asks the cluster nothing, this included (docs/admission.md)."""
    store(kube_api, "Service", "dev", ANOTHER_STACK)
    assert verdict(admission="off") == admission.Verdict()
    assert kube_api.requests == []


def test_a_refusal_and_a_taken_name_are_said_together(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    kube_api.webhooks.append(lambda obj: "jobs need the label team" if obj["kind"] == "Job" else None)
    store(kube_api, "Service", "dev", ANOTHER_STACK)
    found = verdict()
    assert found.refused is not None
    lines = found.refused.splitlines()
    assert lines[0] == "the API server refuses MiniCluster 'dev' (a dry run):"
    assert (
        lines[2]
        == "objects that MiniCluster 'dev' would create are in namespace 'default' already, and not this stack's:"
    )
    assert lines[3] == "  - the Service 'dev' (minicluster:name), made by Pulumi stack 'organization/minicluster/other'"
    assert lines[-1] == "Nothing was created."


def test_a_taken_name_whose_object_is_being_deleted_says_it_will_be_free(kube_api: Cluster) -> None:
    """Another stack's `pulumi destroy` still under way (a Job goes once its pods are gone)."""
    kube_api.nodes = FOUR
    going = store(kube_api, "Job", "dev", ANOTHER_STACK)
    going["metadata"]["deletionTimestamp"] = "2026-11-29T11:00:00Z"
    found = verdict()
    assert found.refused is not None
    assert (
        "  - the Job 'dev' (minicluster:name), made by Pulumi stack 'organization/minicluster/other', and being "
        "deleted: once it is gone the name is free\n"
    ) in found.refused


PERSISTENT = {
    "command": None, "size": 1, "maxSize": 4, "keeper": {"enabled": True},
    "restfulApi": {"enabled": True, "secretName": "api-keys"}, "metrics": {"enabled": True, "serviceMonitor": True},
}  # fmt: skip
EVERY_KIND = {
    "autoscaled": ({**PERSISTENT, "autoscale": {"enabled": True}}, 11),  # with the autoscaler's account, Role, binding
    "gang": ({**PERSISTENT, "scheduler": {"gang": "coscheduling"}}, 9),  # with the PodGroup
}
"""Configs with every object the program names itself (tests/resources/test_kube_object.py), and how many:
the Job, the two Services, the ServiceMonitor, the keeper's account, Role, binding and Deployment, and ..."""


@pytest.mark.parametrize("everything, count", EVERY_KIND.values(), ids=EVERY_KIND.keys())
def test_every_object_that_keeps_its_name_is_looked_up(kube_api: Cluster, everything: Json, count: int) -> None:
    """Each is in the dry run, and one of its name that another stack holds is said."""
    kube_api.nodes = FOUR
    kube_api.crds |= {"scheduling.x-k8s.io/v1alpha1/podgroups", "monitoring.coreos.com/v1/servicemonitors"}
    credentials = {"user": "dXNlcg==", "token": "dG9rZW4=", "secret-key": "a2V5"}  # the RESTful API's Secret
    kube_api.existing[("secrets", "default", "api-keys")] = {"metadata": {"name": "api-keys"}, "data": credentials}
    declared = [plain(r.inputs) for r in deploy(config(**everything)).resources if r.typ.startswith("kubernetes:")]
    named = {(obj["kind"], obj["metadata"]["name"]) for obj in declared if "name" in obj["metadata"]}
    for kind, name in named:
        store(kube_api, kind, name, ANOTHER_STACK)
    found = verdict(**everything)
    assert found.refused is not None
    said = {line.split(" (minicluster:")[0] for line in found.refused.splitlines() if " (minicluster:" in line}
    assert said == {f"  - the {kind} {name!r}" for kind, name in named}
    assert len(named) == count
