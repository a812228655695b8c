"""Every object `pulumi up` creates, as multi-document YAML ready for `kubectl apply -f -`."""

from __future__ import annotations

import yaml

from components.builders import manifests
from components.config import certificate
from components.config.spec import MiniClusterSpec


class _ReadableDumper(yaml.SafeDumper):
    """Multi-line strings (broker.toml, the entrypoint) as literal blocks, so the output reads like files."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and all(line == line.rstrip() for line in value.splitlines()) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ReadableDumper.add_representer(str, _string)


def render(spec: MiniClusterSpec) -> str:
    """With the stack's own certificate if it has one, else a fresh local keypair (no keygen pod here)."""
    if spec.curve_certificate is not None:
        cert = certificate.parse(spec.curve_certificate.get_secret_value())
    else:
        cert = certificate.generate(spec.rank0_host)
    return yaml.dump_all(manifests.all_objects(spec, cert.text()), Dumper=_ReadableDumper, sort_keys=False)
