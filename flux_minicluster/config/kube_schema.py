"""Kubernetes' own OpenAPI schemas (kubernetes-validate's package of them, the strict ones: unknown
fields refused; integers whole, as the API server decodes them), for what the config passes on to
Kubernetes as given (a container's securityContext), and for the tests' check of every manifest.

One validator per (schema, Kubernetes version), built once: resolving the references is most of the cost.
"""

from __future__ import annotations

import functools
from typing import Any

from flux_minicluster.config import rules

FLOOR = "1.29.0"
"""The oldest Kubernetes the project supports: what it accepts, every supported version accepts."""
DEFINITIONS = "https://kubernetes.io/api/_definitions.json"


@functools.cache
def _validator_class() -> Any:
    import jsonschema

    base = jsonschema.validators.Draft202012Validator
    whole = base.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    return jsonschema.validators.extend(base, type_checker=whole)


def _folder(version: str) -> str:
    return f"kubernetes-json-schema/v{version}-local-strict"


@functools.cache
def _registry(version: str) -> Any:
    from kubernetes_validate import utils as schema_files
    from referencing import Registry, Resource

    definitions = schema_files.schema_contents(f"{_folder(version)}/_definitions.json", version)
    return Resource.from_contents(definitions) @ Registry()


@functools.cache
def validator(schema_file: str, version: str) -> Any:
    """For an object of a kind (`job-batch-v1.json`), from the version's own schema file."""
    from kubernetes_validate import utils as schema_files
    from referencing import Resource

    schema = schema_files.schema_contents(f"{_folder(version)}/{schema_file}", version)
    return _validator_class()(schema, registry=Resource.from_contents(schema) @ _registry(version))


@functools.cache
def definition_validator(definition: str, version: str = FLOOR) -> Any:
    """For a part of an object (io.k8s.api.core.v1.SecurityContext)."""
    schema = {"$ref": f"{DEFINITIONS}#/$defs/{definition}"}
    return _validator_class()(schema, registry=_registry(version))


def problem(check: Any, value: Any) -> str | None:
    """The most relevant reason `check` refuses `value`, as `path: message` (None: it does not)."""
    import jsonschema

    error = jsonschema.exceptions.best_match(check.iter_errors(value))
    if error is None:
        return None
    path = rules.key_path(error.absolute_path)
    return f"{path}: {error.message}" if path else error.message


def as_kubernetes_has_it(definition: str, value: Any) -> Any:
    """`value`, or a ValueError saying where Kubernetes' schema of `definition` refuses it."""
    found = problem(definition_validator(definition), value)
    if found:
        raise ValueError(f"Kubernetes refuses it: {found}")
    return value
