"""Read a MiniCluster spec from a Pulumi stack file (`Pulumi.<stack>.yaml`) without Pulumi.

Used by the scripts that run outside `pulumi up` (render, the operations tool). Encrypted values
(`secure:`) cannot be read without Pulumi; only the certificate may be one (it is then left out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.spec import ConfigError, MiniClusterSpec, load_spec

PROJECT_ROOT = Path(__file__).resolve().parent.parent
ENCRYPTED_ALLOWED = {"minicluster:curveCertificate"}


def stack_path(stack: str) -> Path:
    return PROJECT_ROOT / f"Pulumi.{stack}.yaml"


def stack_name(path: Path) -> str:
    """`Pulumi.<stack>.yaml` names its stack; any other file name is taken as the dev stack."""
    parts = path.name.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == "Pulumi" else "dev"


def read_config(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The stack's config values, and the keys left out because they are encrypted."""
    if not path.is_file():
        raise ConfigError([f"no stack file {path}"])
    document = yaml.safe_load(path.read_text()) or {}
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError([f"{path}: `config` must be a mapping of keys to values"])
    encrypted = [key for key, value in config.items() if isinstance(value, dict) and "secure" in value]
    unreadable = [key for key in encrypted if key not in ENCRYPTED_ALLOWED]
    if unreadable:
        raise ConfigError([f"{key}: an encrypted value cannot be read without Pulumi" for key in unreadable])
    return {key: value for key, value in config.items() if key not in encrypted}, encrypted


def load(path: Path) -> tuple[MiniClusterSpec, list[str]]:
    config, encrypted = read_config(path)
    return load_spec(config, stack_name(path)), encrypted
