"""What crosses the engine to a dynamic provider, made plain: every input travels as a protobuf
Struct, so numbers arrive as doubles, `None` values are dropped, secrets may arrive wrapped and, in a
preview, values may be unknown. The providers' input models type the numbers again; these helpers do
the rest."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, Self

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, ConfigureRequest, DiffResult, Resource, ResourceProvider
from pulumi.output import Unknown
from pulumi.runtime import rpc
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.project import NAMESPACE


def plain(value: Any) -> Any:
    """Secrets unwrapped, at any depth (the engine may wrap what the provider sees)."""
    value = rpc.unwrap_rpc_secret(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def differs(old: Any, new: Any) -> bool:
    """Unknown (during a preview) counts as a change; 300 and 300.0 are the same number."""
    return isinstance(new, Unknown) or plain(old) != plain(new)


def known(props: dict[str, Any]) -> dict[str, Any]:
    """The inputs whose values are known (all of them, outside a preview)."""
    return {key: value for key, value in props.items() if not isinstance(value, Unknown)}


class WireInputs(BaseModel):
    """A dynamic resource's inputs, typed again on arrival from the engine (300.0 -> 300): the one
    place where the providers check and compare what the engine sends them."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    REPLACE_ON: ClassVar[frozenset[str]] = frozenset()
    """Inputs whose change means a new resource; any other change is an update."""
    CREATION_ONLY: ClassVar[frozenset[str]] = frozenset()
    """Inputs that matter only when the resource is made: a change of one alone is no change. The
    engine keeps the new value in its state all the same, and a preview shows the outputs as they are
    (an update's are unknown in a preview, and would show whatever is made of them as replaced)."""
    DELETE_BEFORE_REPLACE: ClassVar[bool] = False

    @classmethod
    def from_wire(cls, props: dict[str, Any]) -> Self:
        return cls.model_validate(plain(props))

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)

    @classmethod
    def check_wire(cls, news: dict[str, Any]) -> CheckResult:
        """Each known input that does not fit its type is a failure, named by its input key."""
        given = known(news)
        try:
            cls.model_validate(plain(given))
        except ValidationError as error:
            failures = [CheckFailure(str(e["loc"][0]), e["msg"]) for e in error.errors() if e["loc"][0] in given]
            return CheckResult(news, failures)
        return CheckResult(news, [])

    @classmethod
    def diff_wire(cls, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        """Only the inputs are compared: `__provider` changes with any edit of the provider's code. An
        input that is not given counts as its default: create writes the default into the state, and a
        program leaves out an input it has no value for (autoscale on a Scale without it)."""
        fields = {field.alias or name: field for name, field in cls.model_fields.items()}

        def given(props: dict[str, Any], key: str) -> Any:
            return props[key] if key in props else fields[key].get_default(call_default_factory=True)

        keys = [key for key in fields if key not in cls.CREATION_ONLY]
        changed = [key for key in keys if differs(given(olds, key), given(news, key))]
        replaces = [key for key in changed if key in cls.REPLACE_ON]
        return DiffResult(
            changes=bool(changed), replaces=replaces, delete_before_replace=cls.DELETE_BEFORE_REPLACE and bool(replaces)
        )


class ClusterInputs(WireInputs):
    """The inputs of a resource whose provider talks to the cluster: the Kubernetes provider's own
    `context` and `kubeconfig` (kube.Access), so that it talks to the cluster the objects are in. Given
    only when set: an older stack's state, which has neither, sees no change."""

    kube_context: str | None = Field(default=None, alias="kubeContext")
    kubeconfig: str | None = None
    """A path, or a kubeconfig's text with its credentials: it leaves the provider marked secret."""

    def to_wire(self) -> dict[str, Any]:
        wire = super().to_wire()
        if "kubeconfig" in wire:
            wire["kubeconfig"] = rpc.wrap_rpc_secret(wire["kubeconfig"])
        return wire

    def api_client(self) -> Any:
        return Access(self.kube_context, self.kubeconfig).client()


def cluster_inputs(access: Access) -> dict[str, Any]:
    """What the program gives a ClusterInputs resource of the cluster: the kubeconfig as a secret."""
    given = {"kubeContext": access.context}
    return given if access.kubeconfig is None else {**given, "kubeconfig": pulumi.Output.secret(access.kubeconfig)}


class WireProvider(ResourceProvider):
    """A dynamic provider whose inputs are a WireInputs model: its check and diff are the model's."""

    INPUTS: ClassVar[type[WireInputs]]

    def configure(self, req: ConfigureRequest) -> None:
        """Called in the dynamic providers' process alone, once it has loaded this provider. That process
        reports a failure as the exception's traceback (pulumi.dynamic's `traceback.format_exc()`), which
        put twenty lines of the SDK's frames and this package's before the message written for the user
        ("error: Traceback (most recent call last):" was all `pulumi up`'s progress showed of a keygen pod
        whose image could not be pulled). With `sys.tracebacklimit` 0 the report is the exception's line
        alone, as the component package's plugin reports it (provider/server.py). It holds for the whole
        process, which runs only the program's dynamic resources: a program that declares dynamic
        resources of its own beside a MiniCluster sees their failures as one line too."""
        sys.tracebacklimit = 0

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        return self.INPUTS.check_wire(news)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return self.INPUTS.diff_wire(olds, news)


class WireResource(Resource):
    """A resource served by a WireProvider. In a Python program it is a dynamic resource (its provider
    pickled into the state and run on the program's own Python). When the component package hosts the
    MiniCluster for another language's program (`packaged`), it is the package's own type,
    `minicluster:index:<name>`, served by the package's plugin: a dynamic one would need the calling
    program's Python to hold this package, which a YAML or TypeScript program's does not."""

    PROVIDER: ClassVar[type[WireProvider]]
    package_type: ClassVar[str]

    def __init_subclass__(cls, module: str = "", name: str = "Resource", **kwargs: Any) -> None:
        super().__init_subclass__(module=module, name=name, **kwargs)
        cls.package_type = f"{NAMESPACE}:index:{name}"  # the package's name is the project's

    def __init__(
        self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions | None, *, packaged: bool
    ) -> None:
        if packaged:
            pulumi.CustomResource.__init__(self, self.package_type, name, props, opts)
        else:
            super().__init__(self.PROVIDER(), name, props, opts)


@contextmanager
def failing_as(doing: str, *saying: type[Exception]) -> Iterator[None]:
    """A failed request to the cluster becomes one line: what it was `doing`, and why it failed. The
    `saying` errors carry their own message for the user already, and pass as they are."""
    from flux_minicluster.cluster import kube

    try:
        yield
    except saying:
        raise
    except Exception as error:
        raise kube.failure(doing, error) from None


DELETE_UNREACHABLE = "PULUMI_K8S_DELETE_UNREACHABLE"
"""pulumi-kubernetes's way out of a stack whose cluster is gone, which its errors name: set to "true",
it drops from the state each object it cannot reach, at a refresh or a destroy. The MiniCluster's own
resources that talk to the cluster then do the same, or `pulumi destroy` would stop at them."""


def dropped_when_unreachable(error: BaseException) -> bool:
    """Whether a request that failed with `error` leaves the resource to be dropped from the state: the
    cluster cannot be reached (no kubeconfig context for it, or no answer), and DELETE_UNREACHABLE is
    "true", as pulumi-kubernetes reads it."""
    from flux_minicluster.cluster import kube

    if os.environ.get(DELETE_UNREACHABLE) != "true":
        return False
    return isinstance(error, kube.NoCluster) or kube.problem(error).unreachable
