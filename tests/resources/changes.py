"""What a `pulumi up` would change between two deployments on mocks: the inputs that differ, as the
engine compares them, and which of those a resource's ignoreChanges leaves alone."""

from __future__ import annotations

from typing import Any

from tests.harness import Deployment
from tests.plain import plain


def changed_paths(old: Any, new: Any, path: str = "") -> list[str]:
    """The property paths whose values differ, as ignoreChanges spells them."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(set(old) | set(new))
        return [p for key in keys for p in changed_paths(old.get(key), new.get(key), f"{path}.{key}".lstrip("."))]
    return [] if old == new else [path]


def changes(before: Deployment, after: Deployment) -> dict[str, list[str]]:
    """Resource name -> the input paths that changed (resources in both deployments)."""
    old = {r.name: plain(r.inputs) for r in before.resources}
    return {
        r.name: paths
        for r in after.resources
        if r.name in old and (paths := changed_paths(old[r.name], plain(r.inputs)))
    }


def not_ignored(deployment: Deployment, name: str, paths: list[str]) -> list[str]:
    ignored = deployment.options[name]["ignoreChanges"]
    return [path for path in paths if not any(path == i or path.startswith(f"{i}.") for i in ignored)]
