"""Kubernetes' OpenAPI schemas, as the API server reads objects (flux_minicluster.config.kube_schema):
unknown fields refused, integers whole; and the published schemas of the custom resources the program
may create (tests/crds/: PodGroups, the ServiceMonitor)."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from flux_minicluster.config import kube_schema

Json = dict[str, Any]
CRDS = Path(__file__).parent / "crds"
SCHEMAS = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
"""Kubernetes' own OpenAPI schemas, one folder a release, as kubernetes-validate ships them."""
VERSIONS = sorted(
    (p.name.removeprefix("v").removesuffix("-local") for p in SCHEMAS.glob("v*-local")),
    key=lambda v: tuple(int(part) for part in v.split(".")),
)
SUPPORTED = [v for v in VERSIONS if tuple(int(p) for p in v.split(".")[:2]) >= (1, 29)]
"""The releases the project supports: 1.29 to the newest."""


def validator(kind: str, api_version: str, version: str) -> Any:
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return kube_schema.validator(f"{kind.lower()}-{group}.json", version)


def problem(obj: dict[str, Any], version: str) -> str | None:
    """The most relevant reason Kubernetes `version` would refuse `obj`, as `path: message` (None: none)."""
    return kube_schema.problem(validator(obj.get("kind", ""), obj.get("apiVersion", ""), version), obj)


def assert_conforms(obj: dict[str, Any], version: str) -> None:
    found = problem(obj, version)
    assert found is None, f"{obj.get('kind')} does not conform to Kubernetes {version}: {found}"


@functools.cache
def crd_validator(api_version: str) -> Any:
    """The CRD's published schema, as the API server applies it with strict field validation (kubectl's
    default): unknown fields are refused, not pruned."""
    for path in CRDS.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        if f"{crd['group']}/{crd['version']}" == api_version:
            return jsonschema.Draft7Validator(_strict(crd["openAPIV3Schema"]))
    raise AssertionError(f"no CRD schema for {api_version}")


def _strict(schema: Json) -> Json:
    strict = {key: _strict(value) if isinstance(value, dict) else value for key, value in schema.items()}
    if "properties" in strict:
        strict["properties"] = {name: _strict(sub) for name, sub in schema["properties"].items()}
        strict.setdefault("additionalProperties", False)
    return strict


def crd_problems(obj: Json) -> list[str]:
    return [error.message for error in crd_validator(obj["apiVersion"]).iter_errors(obj)]
