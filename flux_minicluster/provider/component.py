"""The component package's Construct: a MiniCluster declared for another language's program, from its
inputs, exactly as the stack program declares one from its stack file (resources/program.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.provider as provider

from flux_minicluster.config.outputs import COMPONENT, OUTPUTS
from flux_minicluster.provider.inputs import ComponentInputs, resolve
from flux_minicluster.provider.schema import package_schema, version
from flux_minicluster.resources.minicluster import MiniCluster, MiniClusterArgs
from flux_minicluster.resources.program import checked_spec


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
        return _not_yet_known(name, inputs, options)
    kube_context = pulumi.Config("kubernetes").get("context")
    spec = checked_spec(inputs.stack_config(), name, inputs.secret_keys(), kube_context)
    cluster = MiniCluster(name, MiniClusterArgs(spec=spec, kube_context=kube_context, packaged=True), options)
    return Declared(cluster.urn, {key: value for key, value in cluster.outputs().items() if value is not None})


def _not_yet_known(name: str, inputs: ComponentInputs, options: pulumi.ResourceOptions | None) -> Declared:
    """A preview before the resources an input comes from exist: the MiniCluster alone, its outputs
    unknown, and why."""
    keys = ", ".join(f"minicluster:{key}" for key in inputs.unknown)
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
