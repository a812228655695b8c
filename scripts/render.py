#!/usr/bin/env python3
"""Print every object `pulumi up` would create for a stack, as multi-document YAML.

    python scripts/render.py --stack dev            # reads Pulumi.dev.yaml
    python scripts/render.py --config PATH          # any stack file
    python scripts/render.py --stack dev | kubectl apply -f -

Uses the same builders as the Pulumi program. No keygen pod can run here, so the certificate is made
locally with pyzmq unless the stack provides one in plain text (an encrypted `secure:` value cannot be
read without Pulumi: a local one is made instead, with a note on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from components import certificate, manifests  # noqa: E402
from components.spec import ConfigError, MiniClusterSpec, load_spec  # noqa: E402


def read_stack_file(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text()) or {}
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError([f"{path}: `config` must be a mapping of keys to values"])
    encrypted = [key for key, value in config.items() if isinstance(value, dict) and "secure" in value]
    unreadable = [key for key in encrypted if key != "minicluster:curveCertificate"]
    if unreadable:
        raise ConfigError([f"{key}: an encrypted value cannot be rendered without Pulumi" for key in unreadable])
    if encrypted:
        print("note: minicluster:curveCertificate is encrypted; rendering with a local keypair", file=sys.stderr)
    return {key: value for key, value in config.items() if key not in encrypted}


def stack_from_path(path: Path) -> str:
    parts = path.name.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == "Pulumi" else "dev"


class _ReadableDumper(yaml.SafeDumper):
    """Multi-line strings (broker.toml, the entrypoint) as literal blocks, so the output reads like files."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and all(line == line.rstrip() for line in value.splitlines()) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ReadableDumper.add_representer(str, _string)


def render(spec: MiniClusterSpec) -> str:
    if spec.curve_certificate is not None:
        cert = certificate.parse(spec.curve_certificate.get_secret_value())
    else:
        cert = certificate.generate(spec.rank0_host)
    return yaml.dump_all(manifests.all_objects(spec, cert.text()), Dumper=_ReadableDumper, sort_keys=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads Pulumi.<stack>.yaml in the project")
    source.add_argument("--config", type=Path, help="path to a stack config file")
    args = parser.parse_args(argv)
    path = args.config or ROOT / f"Pulumi.{args.stack}.yaml"
    if not path.is_file():
        print(f"error: no stack file {path}", file=sys.stderr)
        return 2
    try:
        spec = load_spec(read_stack_file(path), args.stack or stack_from_path(path))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(render(spec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
