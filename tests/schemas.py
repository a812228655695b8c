"""Kubernetes' OpenAPI schemas (from kubernetes-validate's package), as the API server reads objects:
unknown fields refused (the strict schemas), and integers whole (`300.0` is not an int64).

One validator per (kind, apiVersion, Kubernetes version), built once: resolving the schemas'
references is most of the cost, and a test suite checks hundreds of objects.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jsonschema
from kubernetes_validate import utils as schema_files
from referencing import Registry, Resource

_WHOLE_INTEGERS = jsonschema.validators.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
)
_Validator = jsonschema.validators.extend(jsonschema.validators.Draft202012Validator, type_checker=_WHOLE_INTEGERS)


@functools.cache
def validator(kind: str, api_version: str, version: str) -> Any:
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    schema = schema_files.schema_contents(f"{folder}/{kind.lower()}-{group}.json", version)
    definitions = schema_files.schema_contents(f"{folder}/_definitions.json", version)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return _Validator(schema, registry=registry)


def problem(obj: dict[str, Any], version: str) -> str | None:
    """The most relevant reason Kubernetes `version` would refuse `obj`, as `path: message` (None: none)."""
    check = validator(obj.get("kind", ""), obj.get("apiVersion", ""), version)
    error = jsonschema.exceptions.best_match(check.iter_errors(obj))
    if error is None:
        return None
    return f"{'.'.join(str(part) for part in error.absolute_path)}: {error.message}"


def assert_conforms(obj: dict[str, Any], version: str) -> None:
    found = problem(obj, version)
    assert found is None, f"{obj.get('kind')} does not conform to Kubernetes {version}: {found}"
