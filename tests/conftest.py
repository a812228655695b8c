"""Shared test data: one base config; each test overrides one thing."""

from __future__ import annotations

from typing import Any

import pytest

IMAGE = "ghcr.io/flux-framework/flux-restful-api:latest"
BASE_CONFIG: dict[str, Any] = {"image": IMAGE, "size": 4, "command": "hostname"}


def config(**overrides: Any) -> dict[str, Any]:
    """The base config with overrides; an override of None removes the key."""
    merged = {**BASE_CONFIG, **overrides}
    return {key: value for key, value in merged.items() if value is not None}


@pytest.fixture
def base_config() -> dict[str, Any]:
    return config()
