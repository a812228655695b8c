"""The component package's schema (Pulumi's package schema), made from the config model: every stack
config key is an input of `minicluster:index:MiniCluster`, with the same name, type, default, nesting
and description, and nothing else; the outputs are config/outputs.py's. Pure: no Pulumi imports.

`python -m flux_minicluster.provider.schema` prints it.
"""

from __future__ import annotations

import json
import re
import types
import typing
from importlib import metadata
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from flux_minicluster.config.field_docs import field_doc
from flux_minicluster.config.loader import config_keys
from flux_minicluster.config.outputs import COMPONENT, OUTPUTS
from flux_minicluster.config.project import NAMESPACE
from flux_minicluster.config.spec import MiniClusterSpec

DEFAULT_NAME = "the resource name"
"""`name`'s default in the package: the stack program names its MiniCluster after the stack, a program
of another language gives it a resource name of its own."""

Spec = dict[str, Any]


def package_schema() -> Spec:
    types_: dict[str, Spec] = {}
    inputs, required = _properties(MiniClusterSpec, types_)
    inputs["name"]["description"] += f" In the package: {DEFAULT_NAME}."
    required.remove("name")  # it has that default, given by the loader
    return {
        "name": NAMESPACE,
        "displayName": "Flux MiniCluster",
        "version": version(),
        "description": "A Flux Framework cluster inside Kubernetes: N pods, each running a Flux broker, joined into "
        "one Flux instance (an Indexed Job behind a headless Service).",
        "keywords": ["flux", "hpc", "kubernetes", "category/cloud", "kind/component"],
        "license": "Apache-2.0",
        "language": {
            "nodejs": {"packageName": "@flux-minicluster/minicluster", "respectSchemaVersion": True},
            "python": {"packageName": "pulumi_flux_minicluster", "respectSchemaVersion": True},
            "go": {"importBasePath": "flux-minicluster.local/sdk/go/minicluster", "respectSchemaVersion": True},
            "csharp": {"rootNamespace": "FluxMiniCluster", "respectSchemaVersion": True},
        },
        "resources": {
            COMPONENT: {
                "isComponent": True,
                "description": "N pods, each running a Flux broker, joined into one Flux instance. Its inputs are the "
                "stack config keys of docs/configuration.md.",
                "inputProperties": inputs,
                "requiredInputs": required,
                "properties": {out.key: {"type": out.kind, "description": out.description} for out in OUTPUTS},
                "required": [out.key for out in OUTPUTS if out.always],
            }
        },
        "types": types_,
    }


def version() -> str:
    """The installed package's version (pyproject.toml)."""
    return metadata.version("flux-minicluster")


def _properties(model: type[BaseModel], types_: dict[str, Spec]) -> tuple[dict[str, Spec], list[str]]:
    properties, required = {}, []
    for key, name in config_keys(model).items():
        field = model.model_fields[name]
        properties[key] = _property(key, field, field_doc(model, name), types_)
        if field.is_required():
            required.append(key)
    return properties, required


def _property(key: str, field: FieldInfo, meaning: str, types_: dict[str, Spec]) -> Spec:
    spec = {**_type(key, field.annotation, types_), "description": meaning}
    default = None if field.is_required() else field.get_default(call_default_factory=True)
    if isinstance(default, str | bool | int | float) and not isinstance(default, SecretStr):
        spec["default"] = default
    return spec


def _type(key: str, annotation: Any, types_: dict[str, Spec]) -> Spec:
    """A property's type as the schema spells it; a model becomes an object type of its own, a Literal
    an enum type, both named after what they are."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type(key, args[0], types_)
    if origin in (typing.Union, types.UnionType):
        rest = [arg for arg in args if arg is not type(None)]
        if len(rest) == 1:
            return _type(key, rest[0], types_)
        return {"oneOf": [_type(key, arg, types_) for arg in rest]}
    if annotation is SecretStr:
        return {"type": "string", "secret": True}
    if annotation is Any:
        return {"$ref": "pulumi.json#/Any"}
    if origin is typing.Literal:
        return {"$ref": _enum(key, args, types_)}
    if origin is list:
        return {"type": "array", "items": _type(key, args[0], types_)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type(key, args[1], types_)}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {"$ref": _object(annotation, types_)}
    return {"type": _SCALARS[annotation]}


_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _object(model: type[BaseModel], types_: dict[str, Spec]) -> str:
    token = f"{NAMESPACE}:index:{model.__name__}"
    if token not in types_:
        types_[token] = {}  # taken before its own properties: a model may hold itself
        properties, required = _properties(model, types_)
        types_[token] = {"type": "object", "description": _first_line(model), "properties": properties}
        if required:
            types_[token]["required"] = required
    return f"#/types/{token}"


def _enum(key: str, values: tuple[Any, ...], types_: dict[str, Spec]) -> str:
    token = f"{NAMESPACE}:index:{key[0].upper()}{key[1:]}"
    spec = {"type": "string", "enum": [{"name": _enum_name(value), "value": value} for value in values]}
    if types_.get(token, spec) != spec:
        raise ValueError(f"two enums would be named {token}: name them apart in the schema")
    types_[token] = spec
    return f"#/types/{token}"


def _enum_name(value: str) -> str:
    words = re.split(r"[^A-Za-z0-9]+", value)
    return "".join(word[:1].upper() + word[1:] for word in words if word) or "Empty"


def _first_line(model: type[BaseModel]) -> str:
    return " ".join((model.__doc__ or model.__name__).strip().split("\n\n")[0].split())


if __name__ == "__main__":
    print(json.dumps(package_schema(), indent=2))
