"""Read a MiniCluster spec from a Pulumi stack file (`Pulumi.<stack>.yaml`) without Pulumi.

Used by the scripts that run outside `pulumi up` (render, the operations tool). Encrypted values
(`secure:`) cannot be read without Pulumi. The certificate, when encrypted, is left out; the other
keys that may be secret (environment, command, hooks) read as a placeholder where they are encrypted,
and count as the stack's secret keys. Other packages' encrypted keys (a `kubernetes:kubeconfig` set
with `--secret`) are not the MiniCluster's: they are left out too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from flux_minicluster.config.loader import ALWAYS_SECRET, SECRETS_KEPT, ConfigError, NoStackFile, load_spec
from flux_minicluster.config.project import NAMESPACE
from flux_minicluster.config.spec import MiniClusterSpec

ENCRYPTED_ALLOWED = {f"{NAMESPACE}:{key}" for key in SECRETS_KEPT}
LEFT_OUT = f"{NAMESPACE}:{ALWAYS_SECRET}"
ENCRYPTED = "(encrypted in the stack file: only pulumi can read it)"
"""What an encrypted value reads as here."""


def project_dir(start: Path | None = None) -> Path:
    """The Pulumi project the command runs in: like `pulumi`, the nearest folder from here up that holds
    Pulumi.yaml (else here), so the installed `minicluster` works from anywhere inside a project."""
    here = (start or Path.cwd()).resolve()
    return next((folder for folder in (here, *here.parents) if (folder / "Pulumi.yaml").is_file()), here)


def stack_path(stack: str) -> Path:
    return project_dir() / f"Pulumi.{stack}.yaml"


def stack_name(path: Path) -> str:
    """`Pulumi.<stack>.yaml` names its stack; any other file name is taken as the dev stack."""
    parts = path.name.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == "Pulumi" else "dev"


def read_config(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The stack's config values as `pulumi up` hands them to the program, and the keys left out
    because they are encrypted. Like the Pulumi CLI, a scalar value arrives as its YAML text (so
    `true` or `4` is the string "true" or "4", and the model decides what it may be) and an object
    or a list as JSON."""
    if not path.is_file():
        here = sorted(
            found.name.removeprefix("Pulumi.").removesuffix(".yaml") for found in path.parent.glob("Pulumi.*.yaml")
        )
        stacks = f"the stacks here: {', '.join(here)}" if here else "there is no stack file here"
        raise NoStackFile(f"no stack file {path} ({stacks}; a new stack: `pulumi stack init NAME`)")
    text = path.read_text()
    document = yaml.safe_load(text) or {}
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError([f"{path}: `config` must be a mapping of keys to values"])
    encrypted = [key for key, value in config.items() if _is_encrypted(value)]
    unreadable = [key for key in encrypted if _ours(key) and key not in ENCRYPTED_ALLOWED]
    if unreadable:
        raise ConfigError([f"{key}: an encrypted value cannot be read without Pulumi" for key in unreadable])
    scalars = _scalar_texts(text)
    left_out = {key for key in encrypted if key == LEFT_OUT or not _ours(key)}
    readable = {key: value for key, value in config.items() if key not in left_out}
    values = {key: scalars[key] if key in scalars else _text(value) for key, value in readable.items()}
    return values, encrypted


def _ours(key: str) -> bool:
    """A key of the MiniCluster's own config (`minicluster:...`), not of another package's."""
    return key.startswith(f"{NAMESPACE}:")


KUBERNETES_SETTINGS = ("kubernetes:context", "kubernetes:kubeconfig")
"""The stack's settings that say which cluster `pulumi up` of it deploys to (pulumi-kubernetes')."""


def kubernetes_settings(path: Path) -> tuple[str | None, str | None]:
    """The stack's `kubernetes:context` and `kubernetes:kubeconfig`, where the stack file has them in
    plain text: the cluster `pulumi up` of the stack deploys to."""
    config, _ = read_config(path)
    return config.get("kubernetes:context"), config.get("kubernetes:kubeconfig")


def encrypted_kubernetes_settings(path: Path) -> list[str]:
    """Those of KUBERNETES_SETTINGS that the stack file holds encrypted (a kubeconfig holds credentials,
    so it is set with --secret): only pulumi can read them."""
    _, encrypted = read_config(path)
    return [key for key in KUBERNETES_SETTINGS if key in encrypted]


def _is_encrypted(value: Any) -> bool:
    if isinstance(value, dict):
        return "secure" in value or any(_is_encrypted(item) for item in value.values())
    return isinstance(value, list) and any(_is_encrypted(item) for item in value)


def _text(value: Any) -> str:
    """A value as the engine hands it over (JSON for structures), with encrypted parts as ENCRYPTED."""

    def readable(item: Any) -> Any:
        if isinstance(item, dict):
            return ENCRYPTED if "secure" in item else {key: readable(inner) for key, inner in item.items()}
        return [readable(inner) for inner in item] if isinstance(item, list) else item

    shown = readable(value)
    return shown if isinstance(shown, str) else json.dumps(shown)


def _scalar_texts(text: str) -> dict[str, str]:
    """The config's scalar values exactly as written (their YAML text, quotes removed)."""
    root = yaml.compose(text)
    if not isinstance(root, yaml.MappingNode):
        return {}
    for key, section in root.value:
        if key.value == "config" and isinstance(section, yaml.MappingNode):
            return {item.value: value.value for item, value in section.value if isinstance(value, yaml.ScalarNode)}
    return {}


def load(path: Path) -> tuple[MiniClusterSpec, list[str]]:
    config, encrypted = read_config(path)
    return load_spec(config, stack_name(path), encrypted), encrypted
