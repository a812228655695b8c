"""The scheduling guard as a dynamic resource: it runs beside the Job (not after it), so that a Job
whose pods cannot be scheduled fails within scheduleTimeout (see flux_minicluster.cluster.scheduling).

It runs again whenever the Job is new: its `revision` is a digest of the Job as declared, so a Job
that is replaced gets a new guard, and any other `pulumi up` leaves it alone. A Job deleted outside
Pulumi is new too: a refresh finds it gone, and its guard with it, so `pulumi up --refresh` makes both.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar

import pulumi
from pulumi.dynamic import (
    CreateResult,
    ReadResult,
    UpdateResult,
)
from pydantic import Field

from flux_minicluster.builders.names import REVISION, with_annotation
from flux_minicluster.resources.wire import (
    ClusterInputs,
    WireProvider,
    WireResource,
    dropped_when_unreachable,
    failing_as,
)


class GuardInputs(ClusterInputs):
    """The guard's inputs, typed again on arrival from the engine (numbers come as doubles)."""

    namespace: str
    job: str
    selector: dict[str, str]
    size: int = Field(ge=1)
    schedule_timeout: int = Field(alias="scheduleTimeout", ge=1)
    job_urn: str = Field(alias="jobUrn")
    revision: str
    gang: str | None = None
    job_timeout: int | None = Field(default=None, alias="jobTimeout", ge=1)
    """How long the guard may follow the pods: the Job's own wait. None in the state of a guard made
    before it was an input."""

    REPLACE_ON: ClassVar[frozenset[str]] = frozenset({"namespace", "job", "revision"})
    CREATION_ONLY: ClassVar[frozenset[str]] = frozenset({"jobTimeout"})
    """The guard follows the pods only when it is made (a new Job)."""


class SchedulingGuardProvider(WireProvider):
    INPUTS = GuardInputs

    def create(self, props: dict[str, Any]) -> CreateResult:
        from flux_minicluster.cluster import scheduling

        inputs = GuardInputs.from_wire(props)
        saying = (scheduling.HeldBack, scheduling.JobNotCreated, scheduling.StoppedBefore)
        with failing_as("following the Job's pods (the scheduling guard)", *saying):
            outcome = scheduling.guard(
                inputs.api_client(), inputs.namespace, inputs.job, inputs.selector, inputs.size,
                float(inputs.schedule_timeout), inputs.job_urn, inputs.revision, gang=inputs.gang,
                job_timeout=float(inputs.job_timeout or "inf"),
            )  # fmt: skip
        resource_id = f"{inputs.namespace}/{inputs.job}/{inputs.revision[:12]}"
        return CreateResult(resource_id, {**inputs.to_wire(), "outcome": outcome})

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """The same Job: nothing to watch again."""
        return UpdateResult({**GuardInputs.from_wire(news).to_wire(), "outcome": olds.get("outcome")})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Gone with its Job (an empty id): the Job the next `pulumi up` makes in its place is guarded."""
        from flux_minicluster.cluster import api_calls, kube

        inputs = GuardInputs.from_wire(props)
        try:
            found = api_calls.existing(inputs.api_client(), api_calls.jobs(inputs.namespace, inputs.job))
        except Exception as error:
            if dropped_when_unreachable(error):
                return ReadResult(None, props)
            raise kube.failure("reading the guarded Job", error) from None
        return ReadResult(id_ if found is not None else None, props)


def revision(job_manifest: Any) -> pulumi.Output[str]:
    """A digest of the Job as declared (names of its ConfigMaps and Secret included, once known), less
    its size: a resize of an elastic Job is not a new Job (one-shot Jobs get new pod templates)."""

    def digest(manifest: dict[str, Any]) -> str:
        spec = {key: value for key, value in manifest["spec"].items() if key not in ("parallelism", "completions")}
        return hashlib.sha256(json.dumps({**manifest, "spec": spec}, sort_keys=True).encode()).hexdigest()

    return pulumi.Output.from_input(job_manifest).apply(digest)


def with_revision(job_manifest: dict[str, Any], job_revision: pulumi.Output[str]) -> dict[str, Any]:
    """The Job as declared, its revision added as an annotation (names.REVISION): how its guard knows it
    from the Job that a replacement deletes first. On the Job alone, not its pods: no new pod template."""
    return with_annotation(job_manifest, REVISION, job_revision)


class SchedulingGuard(WireResource, module="minicluster", name="SchedulingGuard"):
    """Stops the Job when its pods cannot be scheduled within scheduleTimeout."""

    PROVIDER = SchedulingGuardProvider
    outcome: pulumi.Output[str]

    def __init__(
        self, name: str, inputs: dict[str, Any], opts: pulumi.ResourceOptions | None = None, *, packaged: bool = False
    ) -> None:
        super().__init__(name, {**inputs, "outcome": None}, opts, packaged=packaged)
