"""The package's schema against the configuration reference (docs/configuration.md), key by key: the
schema is made from the config model and the reference too, by separate code; each schema entry is
read back into the reference's words here, and the two must say the same of every key."""

from __future__ import annotations

import re
from typing import Any

from flux_minicluster.config.outputs import COMPONENT
from flux_minicluster.provider.schema import DEFAULT_NAME, package_schema
from tests.harness import ROOT

SCHEMA = package_schema()
ROW = re.compile(r"^\| `minicluster:([^`]+)` \| (.*?) \| (.*?) \| (.*) \|$")


def reference() -> dict[str, tuple[str, str, str]]:
    """Key path -> (type, default, meaning), as the reference's table has them."""
    rows = (ROW.match(line) for line in (ROOT / "docs" / "configuration.md").read_text().splitlines())
    return {row[1]: (row[2], row[3], row[4]) for row in rows if row}


def schema_rows(properties: dict[str, Any], required: list[str], prefix: str) -> dict[str, tuple[str, str, str]]:
    """The same table, read from the schema: nested object types give rows of their own."""
    rows = {}
    for key, spec in properties.items():
        meaning = spec["description"].replace("|", "\\|").removesuffix(f" In the package: {DEFAULT_NAME}.")
        default = "**required**" if key in required else _default(spec)
        rows[prefix + key] = (_type(spec), default, meaning)
        nested, suffix = _nested(spec)
        if nested is not None:
            rows |= schema_rows(nested["properties"], nested.get("required", []), f"{prefix}{key}{suffix}.")
    return rows


def _nested(spec: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    for inner, suffix in ((spec, ""), (spec.get("items", {}), "[]"), (spec.get("additionalProperties", {}), ".<name>")):
        target = _ref(inner)
        if target is not None and target.get("type") == "object":
            return target, suffix
    return None, ""


def _ref(spec: dict[str, Any]) -> dict[str, Any] | None:
    ref = spec.get("$ref", "")
    return SCHEMA["types"][ref.removeprefix("#/types/")] if ref.startswith("#/types/") else None


def _type(spec: dict[str, Any]) -> str:
    words = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
    if spec.get("secret"):
        return "secret string"
    if spec.get("$ref") == "pulumi.json#/Any":
        return "any value"
    target = _ref(spec)
    if target is not None:
        enum = target.get("enum")
        return " \\| ".join(f"`{value['value']}`" for value in enum) if enum else "object"
    if "oneOf" in spec:
        return " or ".join(_type(option) for option in spec["oneOf"])
    if spec.get("type") == "array":
        return f"list of {_type(spec['items'])}"
    if spec.get("type") == "object":
        return f"map of name to {_type(spec['additionalProperties'])}"
    return words[spec["type"]]


def _default(spec: dict[str, Any]) -> str:
    if "default" not in spec:
        return "unset"
    value = spec["default"]
    return f"`{str(value).lower()}`" if isinstance(value, bool) else f"`{value}`"


def test_the_schema_has_every_key_of_the_configuration_reference_and_nothing_else() -> None:
    component = SCHEMA["resources"][COMPONENT]
    rows = schema_rows(component["inputProperties"], component["requiredInputs"], "")
    assert sorted(rows) == sorted(reference())


def test_each_key_has_the_references_type_default_and_meaning() -> None:
    component = SCHEMA["resources"][COMPONENT]
    rows = schema_rows(component["inputProperties"], component["requiredInputs"], "")
    documented = reference()
    documented["name"] = (documented["name"][0], "unset", documented["name"][2])  # the package's is the resource name
    # An empty list or map, or an object of its defaults, is what leaving the input out gives: the
    # schema has a default for none of them.
    documented = {key: (kind, "unset" if default in ("`[]`", "`{}`", "see below") else default, meaning)
                  for key, (kind, default, meaning) in documented.items()}  # fmt: skip
    different = {key: (rows[key], documented[key]) for key in documented if rows.get(key) != documented[key]}
    assert different == {}


def test_the_certificate_is_a_secret_input() -> None:
    assert SCHEMA["resources"][COMPONENT]["inputProperties"]["curveCertificate"]["secret"] is True


def test_the_outputs_are_the_components() -> None:
    outputs = SCHEMA["resources"][COMPONENT]["properties"]
    assert sorted(outputs) == sorted(
        ["name", "namespace", "size", "serviceName", "jobName", "rank0Hostname", "publicKey", "logsCommand",
         "apiServiceName"]
    )  # fmt: skip
    assert "apiServiceName" not in SCHEMA["resources"][COMPONENT]["required"]
