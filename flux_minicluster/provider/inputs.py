"""A MiniCluster's inputs as another language's SDK sends them, made into stack config: the keys are
the config keys already (camelCase); every number arrives as a double (JavaScript has no integers, and
the engine's Struct none either), so a whole one is an integer again; a map's keys arrive in no fixed
order (a protobuf map), so they are sorted, or the pods' environment and volumes would change order,
and the Job be replaced, from one `pulumi up` to the next; a secret arrives wrapped (a nested one
lifts its whole top-level input, as `pulumi config set --secret --path` marks its whole key); during a
preview a value may not be known yet."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime import rpc

from flux_minicluster.config.project import NAMESPACE
from flux_minicluster.resources.wire import plain


@dataclass(frozen=True)
class ComponentInputs:
    values: dict[str, Any]
    """By config key, plain: secrets unwrapped, whole numbers as integers."""
    secret: frozenset[str]
    """The keys whose values came as secrets."""
    unknown: tuple[str, ...]
    """The keys whose values are not known yet (a preview, before the resources they come from exist)."""

    def stack_config(self) -> dict[str, Any]:
        """As the stack program reads its stack file: `minicluster:<key>` -> value."""
        return {f"{NAMESPACE}:{key}": value for key, value in self.values.items()}

    def secret_keys(self) -> set[str]:
        return {f"{NAMESPACE}:{key}" for key in self.secret}


async def resolve(inputs: Mapping[str, pulumi.Input[Any]]) -> ComponentInputs:
    """Each input awaited: the engine has sent them all, so this waits for nothing but the event loop."""
    values, secret, unknown = {}, set(), []
    for key, given in sorted(inputs.items()):
        output = pulumi.Output.from_input(given)
        value = await output.future(with_unknowns=True)
        if not await output.is_known() or rpc.contains_unknowns(value):
            unknown.append(key)
            continue
        if await output.is_secret():
            secret.add(key)
        if value is not None:  # an input set to null is an input not set, as a key left out of a stack file
            values[key] = canonical(plain(value))
    return ComponentInputs(values, frozenset(secret), tuple(unknown))


def canonical(value: Any) -> Any:
    """Whole doubles as integers (4.0 -> 4: `size: 4` from TypeScript; an environment value 4 becomes
    "4", as the stack file's would) and maps in key order, at any depth."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: canonical(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [canonical(item) for item in value]
    return value
