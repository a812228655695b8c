"""The component package's Construct: a MiniCluster declared for another language's program, from its
inputs, exactly as the stack program declares one from its stack file (resources/program.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.provider as provider
from pulumi.output import Unknown
from pulumi.runtime import rpc

from flux_minicluster.cluster import kube
from flux_minicluster.config.outputs import COMPONENT, OUTPUTS
from flux_minicluster.provider.inputs import resolve
from flux_minicluster.provider.schema import package_schema, version
from flux_minicluster.resources.minicluster import MiniCluster, MiniClusterArgs
from flux_minicluster.resources.program import RENDERING, checked_spec, not_rendered, stack_access
from flux_minicluster.resources.wire import plain


class MiniClusterProvider(provider.Provider):
    def __init__(self) -> None:
        super().__init__(version(), json.dumps(package_schema()))

    def construct(
        self, name: str, resource_type: str, inputs: pulumi.Inputs, options: pulumi.ResourceOptions | None = None
    ) -> provider.ConstructResult:
        if resource_type != COMPONENT:
            raise ValueError(f"unknown resource type {resource_type}: this package has {COMPONENT}")
        component: pulumi.Output[Declared] = pulumi.Output.from_input(
            asyncio.ensure_future(_declare(name, inputs, options))
        )
        # Each output on its own: one not known in a preview leaves the others, and the URN, known.
        state = {out.key: component.apply(_output(out.key)) for out in OUTPUTS}
        urn: pulumi.Output[str] = component.apply(lambda declared: declared.urn)
        return provider.ConstructResult(urn=urn, state=state)


@dataclass(frozen=True)
class Declared:
    """The declared component's URN and outputs, held apart: Output.from_input would join a dict's
    values into one Output, unknown in a preview as soon as one of them is."""

    urn: pulumi.Output[str]
    outputs: dict[str, Any]


def _output(key: str) -> Callable[[Declared], Any]:
    return lambda declared: declared.outputs.get(key)


async def _declare(name: str, given: pulumi.Inputs, options: pulumi.ResourceOptions | None) -> Declared:
    """The component's URN and outputs. Every check runs before anything is declared: a refused input
    declares nothing, not even the component."""
    inputs = await resolve(given)
    if inputs.unknown:
        return _not_yet_known(name, [f"minicluster:{key}" for key in inputs.unknown], options)
    access = await _access(options)
    if access is None:
        return _not_yet_known(name, ("the Kubernetes provider's kubeconfig",), options)
    spec = checked_spec(inputs.stack_config(), name, inputs.secret_keys(), access)
    cluster = MiniCluster(name, MiniClusterArgs(spec=spec, access=access, packaged=True), options)
    return Declared(cluster.urn, {key: value for key, value in cluster.outputs().items() if value is not None})


async def _access(options: pulumi.ResourceOptions | None) -> kube.Access | None:
    """The cluster the MiniCluster's objects go to, so that what it asks of the cluster itself goes
    there too: the Kubernetes provider the program gives it (`providers`), as that provider's state
    holds its settings, or else the stack's default provider's (`kubernetes:*` config). None in a
    preview before the provider's kubeconfig is known (a cluster the same program makes)."""
    given = (options.providers or {}) if options is not None else {}
    provider = given.get("kubernetes") if isinstance(given, Mapping) else None
    if provider is None:
        return stack_access()
    urn, provider_id = await provider.urn.future(), await provider.id.future()
    if provider_id in (None, rpc.UNKNOWN):  # its settings are not known yet (the engine's unknown ID)
        return None
    found = await pulumi.runtime.invoke_async("pulumi:pulumi:getResource", {"urn": urn})
    settings = plain((found or {}).get("state") or {})
    if any(
        isinstance(settings.get(key), Unknown) or settings.get(key) == rpc.UNKNOWN
        for key in (*PROVIDER_SETTINGS, RENDERING)
    ):
        return None
    named = f"the Kubernetes provider {str(urn).split('::')[-1]!r}"
    not_rendered(f"{RENDERING} of {named}", settings.get(RENDERING))
    if settings.get("cluster"):
        raise pulumi.RunError(
            f"{named} names a kubeconfig cluster (`cluster`), which the "
            "MiniCluster's own requests cannot follow: give the provider a `context` for that cluster instead"
        )
    kubeconfig = settings.get("kubeconfig")
    if isinstance(kubeconfig, dict):  # JSON text, as a YAML program's config holds it, arrives parsed
        kubeconfig = json.dumps(kubeconfig)
    return kube.Access(settings.get("context"), kubeconfig)


PROVIDER_SETTINGS = ("kubeconfig", "context", "cluster")
"""The Kubernetes provider's settings that say which cluster, and how to log in."""


def _not_yet_known(name: str, unknown: Sequence[str], options: pulumi.ResourceOptions | None) -> Declared:
    """A preview before the resources an input comes from exist: the MiniCluster alone, its outputs
    unknown, and why."""
    keys = ", ".join(unknown)
    if not pulumi.runtime.is_dry_run():
        raise pulumi.RunError(f"{keys}: not known when the MiniCluster is declared")
    component = pulumi.ComponentResource(COMPONENT, name, None, options)
    component.register_outputs({})
    pulumi.log.info(
        f"{keys} not known until the resources it comes from exist: this preview cannot show the MiniCluster's "
        "objects or check its config; `pulumi up` does both before it creates anything",
        resource=component,
    )
    return Declared(component.urn, {out.key: _unknown() for out in OUTPUTS})


def _unknown() -> pulumi.Output[Any]:
    value: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    known: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    value.set_result(None)
    known.set_result(False)
    return pulumi.Output(set(), value, known)
