"""What crosses the engine to a dynamic provider, made plain: every input travels as a protobuf
Struct, so numbers arrive as doubles, `None` values are dropped, secrets may arrive wrapped and, in a
preview, values may be unknown. The providers' input models type the numbers again; these helpers do
the rest."""

from __future__ import annotations

from typing import Any

from pulumi.output import Unknown
from pulumi.runtime import rpc


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
