"""Validated value types, reused by every config model: each one is a plain type plus the rule that
the API server or Flux applies to it (flux_minicluster/config/rules.py), so a field says what it holds and
its check comes with it. A broken rule reads as `must be ...`, with the key added by the loader."""

from __future__ import annotations

import re
import tomllib
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr

from flux_minicluster.config import paths, rules
from flux_minicluster.config.certificate import CertificateError, parse

WEEK = 7 * 24 * 3600


def _check(pattern: re.Pattern[str], problem: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.match(value):
            raise ValueError(problem)
        return value

    return AfterValidator(check)


def _shell_line(value: str) -> str:
    if not rules.shell_words(value):
        raise ValueError("must not be empty (leave it unset for a persistent cluster)")
    return value


def _words(value: str) -> str:
    rules.shell_words(value)
    return value


def _single_line_arguments(value: list[str]) -> list[str]:
    if any("\n" in item or not item for item in value):
        raise ValueError("each item must be a non-empty, single-line argument")
    return value


def _certificate(value: SecretStr) -> SecretStr:
    try:
        parse(value.get_secret_value())
    except CertificateError as error:  # its messages never contain key material
        raise ValueError(str(error)) from None
    return value


def _shared_memory(value: str | None) -> str | None:
    if value is None or value == "none":
        return None
    size = rules.quantities({"sharedMemory": value})["sharedMemory"]
    if rules.quantity(size) <= 0:
        raise ValueError(f"{size!r} is no room: give a size such as 1Gi, or none for the runtime's /dev/shm")
    return size


def _broker_attributes(value: dict[str, Any]) -> dict[str, str]:
    for key, item in value.items():
        if not re.match(r"^[a-z][a-z0-9_.-]*$", key) or "\n" in rules.text(item):
            raise ValueError(f"{key!r}: attributes are lower-case dotted names with single-line values")
    return {key: rules.text(item) for key, item in value.items()}


def _broker_toml(value: str) -> str:
    try:
        bootstrap = tomllib.loads(value).get("bootstrap")
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"is not valid TOML: {error}") from None
    if not isinstance(bootstrap, dict) or not {"hosts", "curve_cert"} <= bootstrap.keys():
        raise ValueError("needs a [bootstrap] table with hosts and curve_cert, or the brokers cannot join")
    return value


Dns1035Label = Annotated[str, AfterValidator(lambda v: rules.label(v, rules.DNS_1035_LABEL, "a DNS-1035 label"))]
"""Service names and the MiniCluster's name: a letter first."""
Dns1123Label = Annotated[str, AfterValidator(lambda v: rules.label(v, rules.DNS_1123_LABEL, "a DNS-1123 label"))]
"""Namespaces and volume names."""
Subdomain = Annotated[str, AfterValidator(rules.subdomain)]
"""Names of ConfigMaps, Secrets, claims, service accounts."""
Image = Annotated[str, AfterValidator(rules.image)]
AbsolutePath = Annotated[str, AfterValidator(rules.absolute_path)]
FluxDuration = Annotated[str, AfterValidator(rules.flux_duration)]
"""RFC 23 Flux Standard Duration: 5s, 500ms, 2m."""
Seconds = Annotated[int, Field(ge=1, le=WEEK)]
Port = Annotated[int, Field(ge=1, le=65535)]


def _scalar_text(value: object) -> object:
    return rules.text(value) if isinstance(value, bool | int | float) else value


Text = Annotated[str, BeforeValidator(_scalar_text)]
"""A label's, an annotation's or a taint's value: a YAML number or boolean (`count: 2`, `gpu: true`,
and what `pulumi config set --path` stores for 2) as the text it reads as, as `environment` takes it."""
Labels = Annotated[dict[str, Text], AfterValidator(rules.labels)]
ExtendedResourceName = Annotated[str, AfterValidator(rules.extended_resource_name)]
"""A device plugin's resource, such as nvidia.com/gpu."""
Quantities = Annotated[dict[str, str | int | float], AfterValidator(rules.quantities)]
SharedMemorySize = Annotated[str | None, AfterValidator(_shared_memory)]
"""A quantity above zero, or none (None) for the container runtime's own /dev/shm."""
ShellLine = Annotated[str, AfterValidator(_shell_line)]
"""A command, split into words like a shell line (no shell runs it)."""
ShellWords = Annotated[str, AfterValidator(_words)]
"""Options in one string, split like a shell line; may be empty."""
Arguments = Annotated[list[str], AfterValidator(_single_line_arguments)]
Executable = Annotated[
    str, _check(re.compile(r"^[^\s'\"$`]+$"), "must be a command name or absolute path without spaces or quotes")
]
NetworkInterface = Annotated[
    str, _check(rules.NETWORK_INTERFACE, "must be an interface name (eth0), `*` or an IPv4 address")
]
ClusterDomain = Annotated[str, AfterValidator(lambda v: rules.subdomain(v, "must be a DNS name like cluster.local"))]
TbonTopology = Annotated[str, _check(rules.TBON_TOPOLOGY, "must be kary:K, binomial or mincrit[:K]")]
CurveCertificate = Annotated[SecretStr, AfterValidator(_certificate)]
BrokerAttributes = Annotated[dict[str, str | int | float | bool], AfterValidator(_broker_attributes)]
BrokerToml = Annotated[str, AfterValidator(_broker_toml)]
MountPath = Annotated[
    str, AfterValidator(rules.absolute_path), AfterValidator(lambda v: rules.clear_of(v, paths.RESERVED))
]
"""Where a volume is mounted: absolute, and clear of the MiniCluster's own directories."""
GitRepository = Annotated[str, _check(re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"), "must be OWNER/NAME")]
GitBranch = Annotated[str, _check(re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$"), "must be a git branch name")]
