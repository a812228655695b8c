"""The API server's limit on one object's size, checked before anything is created: a ConfigMap or a
Secret holds at most 1 MiB of data. Only the objects that hold the user's own text can reach it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flux_minicluster.builders import manifests
from flux_minicluster.config.loader import ConfigError
from flux_minicluster.config.spec import MiniClusterSpec

DATA_LIMIT = 1024 * 1024
"""Bytes of data one ConfigMap or Secret may hold."""
USERS_TEXT: tuple[tuple[Callable[[MiniClusterSpec], Any], str], ...] = (
    (manifests.entrypoint_config_map, "minicluster:command and minicluster:hooks"),
    (manifests.config_secret, "the secret config values"),
    (manifests.broker_config_map, "minicluster:brokerConfig"),
)
"""The builders of the objects that hold the user's text, and the keys that fill each."""


def check(spec: MiniClusterSpec) -> None:
    """Raises ConfigError naming the object, its size and the keys that fill it."""
    problems = []
    for build, keys in USERS_TEXT:
        obj = build(spec)
        data = {**obj.get("data", {}), **obj.get("stringData", {})} if obj is not None else {}
        size = sum(len(key.encode()) + len(str(value).encode()) for key, value in data.items())
        if size > DATA_LIMIT:
            kind, name = obj["kind"], obj["metadata"]["name"]
            problems.append(
                f"{keys}: the {kind} {name} would hold {size} bytes, over the {DATA_LIMIT} (1 MiB) Kubernetes "
                f"allows one {kind}. Put a long script on a volume (minicluster:volumes) and run it from there"
            )
    if problems:
        raise ConfigError(problems)
