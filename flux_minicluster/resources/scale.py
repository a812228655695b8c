"""The size of an elastic MiniCluster as a dynamic resource (the work is in flux_minicluster.cluster.scale).

Pulumi declares the Job with its size fields ignored (they would force a replacement), so a change of
`size` reaches only this resource: `pulumi preview` shows an update of the Scale, not a new Job. It
runs after the Job (its `jobUid` input is the Job's uid), on every create and update:

- create: the Job is new; wait for its brokers (pulumi-kubernetes does not await an elastic Job);
- update: resize the running Job (drain, scale ConfigMap, parallelism and completions), then wait. A
  replaced Job (a new uid) starts at the size Pulumi remembers for it, so it is resized here too;
- read (`pulumi refresh`): the size the Job has, so that a change made outside Pulumi shows up as drift
  and the next `pulumi up` puts the configured size back;
- with autoscale, rank 0 owns the running size: an update resizes only when `size` itself changed (or
  the Job is new), and a refresh does not call the autoscaler's size drift;
- delete: nothing; the Job goes with the MiniCluster.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import pulumi
from pulumi.dynamic import CreateResult, ReadResult, UpdateResult
from pydantic import Field

from flux_minicluster.resources.wire import (
    ClusterInputs,
    WireProvider,
    WireResource,
    dropped_when_unreachable,
    failing_as,
)


class ScaleInputs(ClusterInputs):
    """The Scale's inputs, typed again on arrival from the engine (numbers come as doubles)."""

    namespace: str
    job: str
    job_uid: str = Field(alias="jobUid")
    scale_config: str = Field(alias="scaleConfig")
    selector: dict[str, str]
    size: int = Field(ge=1)
    min_size: int | None = Field(default=None, alias="minSize", ge=1)
    max_size: int = Field(alias="maxSize", ge=1)
    shrink_policy: Literal["wait", "cancel"] = Field(alias="shrinkPolicy")
    shrink_timeout: int = Field(alias="shrinkTimeout", ge=1)
    job_timeout: int = Field(alias="jobTimeout", ge=1)
    schedule_timeout: int = Field(alias="scheduleTimeout", ge=1)
    autoscale: bool = False

    REPLACE_ON: ClassVar[frozenset[str]] = frozenset({"namespace", "job"})


class ScaleProvider(WireProvider):
    INPUTS = ScaleInputs

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = ScaleInputs.from_wire(props)
        outcome = _resize(inputs)
        return CreateResult(f"{inputs.namespace}/{inputs.job}", {**inputs.to_wire(), "outcome": outcome})

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        inputs = ScaleInputs.from_wire(news)
        if inputs.autoscale and not _size_asked(ScaleInputs.from_wire(olds), inputs):
            return UpdateResult({**inputs.to_wire(), "outcome": AUTOSCALED})
        return UpdateResult({**inputs.to_wire(), "outcome": _resize(inputs)})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """The live size; a Job that is gone leaves the props as they were (the Job's own refresh says so)."""
        from flux_minicluster.cluster import kube, scale

        inputs = ScaleInputs.from_wire(props)
        if inputs.autoscale:
            return ReadResult(id_, props)
        try:
            size = scale.live_size(inputs.api_client(), inputs.namespace, inputs.job)
        except Exception as error:
            if dropped_when_unreachable(error):
                return ReadResult(None, props)
            if not isinstance(error, kube.NoCluster) and kube.problem(error).kind == "not-found":
                return ReadResult(id_, props)
            raise kube.failure("reading the Job's size", error) from None
        return ReadResult(id_, {**props, "size": size})


AUTOSCALED = "size left to the autoscaler: `size` and the Job are unchanged"


def _size_asked(olds: ScaleInputs, news: ScaleInputs) -> bool:
    """Whether this update asks for a size: `size` changed, or the Job is new (it starts at the size
    Pulumi remembers for it). Otherwise the running size is the autoscaler's."""
    return olds.size != news.size or olds.job_uid != news.job_uid


def _resize(inputs: ScaleInputs) -> str:
    from flux_minicluster.cluster import scale

    want = scale.Scale(
        **inputs.model_dump(exclude={"job_uid", *ClusterInputs.model_fields})
    )  # the same fields, by name
    with failing_as(f"bringing the MiniCluster to size {inputs.size}", scale.ResizeFailed):
        return "\n".join(scale.resize(inputs.api_client(), want))


class Scale(WireResource, module="minicluster", name="Scale"):
    """The running size of an elastic MiniCluster's Job."""

    PROVIDER = ScaleProvider
    outcome: pulumi.Output[str]
    """What the last create or update did, line by line (the same lines are in rank 0's log)."""

    def __init__(
        self, name: str, inputs: dict[str, Any], opts: pulumi.ResourceOptions | None = None, *, packaged: bool = False
    ) -> None:
        super().__init__(name, {**inputs, "outcome": None}, opts, packaged=packaged)
