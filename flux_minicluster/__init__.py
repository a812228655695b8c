"""A Flux Framework cluster inside Kubernetes, as a Pulumi component: `MiniCluster(name,
MiniClusterArgs(spec=load_spec(...)))` in any Pulumi program, and the `minicluster` command to operate
it. Pulumi is imported only when the component is: the command does not need it."""

from __future__ import annotations

from typing import Any

__all__ = ["ConfigError", "MiniCluster", "MiniClusterArgs", "MiniClusterSpec", "load_spec"]


def __getattr__(name: str) -> Any:
    if name in ("MiniCluster", "MiniClusterArgs"):
        from flux_minicluster.resources import minicluster

        return getattr(minicluster, name)
    if name in ("ConfigError", "load_spec"):
        from flux_minicluster.config import loader

        return getattr(loader, name)
    if name == "MiniClusterSpec":
        from flux_minicluster.config.spec import MiniClusterSpec

        return MiniClusterSpec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
