"""The JobDeletion resource: the Job depends on it, so Pulumi deletes it after the Job, and its delete
waits until the Job and its pods are gone (flux_minicluster.cluster.deletion). It is replaced, delete
first, whenever the Job is, so that a replaced Job is gone before the new one is created. pulumi-kubernetes
awaits a one-shot Job's deletion itself, but not an elastic one's (skipAwait), whatever replaces it."""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar

import pulumi
from pulumi.dynamic import CreateResult, UpdateResult
from pydantic import Field

from flux_minicluster.resources.wire import (
    ClusterInputs,
    WireProvider,
    WireResource,
    dropped_when_unreachable,
    failing_as,
)

IDENTITY = ("completionMode", "successPolicy", "podFailurePolicy", "template")
"""The Job's fields that Kubernetes does not let change: a change of one is a new Job."""


class DeletionInputs(ClusterInputs):
    namespace: str
    job: str
    selector: dict[str, str]
    identity: str
    """A digest of the Job's name and immutable fields: it changes exactly when the Job is replaced."""
    timeout: int = Field(ge=1)

    REPLACE_ON: ClassVar[frozenset[str]] = frozenset({"namespace", "job", "selector", "identity"})
    DELETE_BEFORE_REPLACE: ClassVar[bool] = True


class JobDeletionProvider(WireProvider):
    INPUTS = DeletionInputs

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = DeletionInputs.from_wire(props)
        return CreateResult(f"{inputs.namespace}/{inputs.job}", inputs.to_wire())

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(DeletionInputs.from_wire(news).to_wire())

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        from flux_minicluster.cluster import deletion

        inputs = DeletionInputs.from_wire(props)
        with failing_as(f"waiting for the Job {inputs.namespace}/{inputs.job} to be gone", deletion.StillThere):
            try:
                api_client = inputs.api_client()
                deletion.wait_until_gone(api_client, inputs.namespace, inputs.job, inputs.selector, inputs.timeout)
            except Exception as error:
                if not dropped_when_unreachable(error):
                    raise


def identity(job_manifest: Any) -> pulumi.Output[str]:
    def digest(manifest: dict[str, Any]) -> str:
        fixed = {key: manifest["spec"].get(key) for key in IDENTITY}
        named = {"metadata": {key: manifest["metadata"].get(key) for key in ("name", "namespace")}, "spec": fixed}
        return hashlib.sha256(json.dumps(named, sort_keys=True).encode()).hexdigest()

    return pulumi.Output.from_input(job_manifest).apply(digest)


class JobDeletion(WireResource, module="minicluster", name="JobDeletion"):
    """Waits, when deleted, until the elastic Job and its pods are gone."""

    PROVIDER = JobDeletionProvider

    def __init__(
        self, name: str, inputs: dict[str, Any], opts: pulumi.ResourceOptions | None = None, *, packaged: bool = False
    ) -> None:
        super().__init__(name, inputs, opts, packaged=packaged)
