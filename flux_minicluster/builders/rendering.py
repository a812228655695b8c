"""Every object `pulumi up` creates, as multi-document YAML ready for `kubectl apply -f -`."""

from __future__ import annotations

import yaml

from flux_minicluster.builders import manifests
from flux_minicluster.config import certificate
from flux_minicluster.config.spec import MiniClusterSpec


class _ReadableDumper(yaml.SafeDumper):
    """Multi-line strings (broker.toml, the entrypoint) as literal blocks, so the output reads like files."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and all(line == line.rstrip() for line in value.splitlines()) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ReadableDumper.add_representer(str, _string)


HIDDEN = "(hidden: render.py --show-secrets prints it)"
"""What a Secret's values read as unless secrets are asked for."""


def render(spec: MiniClusterSpec, show_secrets: bool = False) -> str:
    """With a fresh local keypair: no keygen pod runs here, and a stack's own certificate is encrypted
    (only Pulumi can read it; one in plain text is refused). Every Secret's values (the certificate, the
    secret config values) are placeholders unless `show_secrets`."""
    objects = manifests.all_objects(spec, certificate.generate(spec.rank0_host).text())
    if not show_secrets:
        objects = [without_secret_values(obj) for obj in objects]
    return yaml.dump_all(objects, Dumper=_ReadableDumper, sort_keys=False)


def without_secret_values(obj: manifests.Manifest) -> manifests.Manifest:
    if obj["kind"] != "Secret":
        return obj
    return {**obj, "stringData": dict.fromkeys(obj["stringData"], HIDDEN)}
