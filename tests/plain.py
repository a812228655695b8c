"""Turn what the mocks saw back into plain manifests, for comparison with the builders' output."""

from __future__ import annotations

from typing import Any

from pulumi.runtime import rpc


def plain(value: Any) -> Any:
    """Unwrap Pulumi secrets and turn the mocks' integral floats (wire numbers) back into ints."""
    if isinstance(value, dict):
        if rpc._special_sig_key in value and value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return plain(value["value"])
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig


def without_secrets(value: Any) -> Any:
    """What a reader of the state, a preview or a log sees: secret values are hidden."""
    if is_secret(value):
        return "[secret]"
    if isinstance(value, dict):
        return {key: without_secrets(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_secrets(item) for item in value]
    return value
