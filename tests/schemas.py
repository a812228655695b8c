"""Kubernetes' OpenAPI schemas, as the API server reads objects (flux_minicluster.config.kube_schema):
unknown fields refused, integers whole."""

from __future__ import annotations

import re
from typing import Any

from flux_minicluster.config import kube_schema


def validator(kind: str, api_version: str, version: str) -> Any:
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return kube_schema.validator(f"{kind.lower()}-{group}.json", version)


def problem(obj: dict[str, Any], version: str) -> str | None:
    """The most relevant reason Kubernetes `version` would refuse `obj`, as `path: message` (None: none)."""
    return kube_schema.problem(validator(obj.get("kind", ""), obj.get("apiVersion", ""), version), obj)


def assert_conforms(obj: dict[str, Any], version: str) -> None:
    found = problem(obj, version)
    assert found is None, f"{obj.get('kind')} does not conform to Kubernetes {version}: {found}"
