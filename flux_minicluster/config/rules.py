"""Kubernetes' and Flux's rules for names and values, as checks that raise ValueError naming the rule.

Pure. The config models call these, so a value the API server or a broker would refuse is refused
at `pulumi preview`, with the rule in the message.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from decimal import Decimal

from kubernetes.utils import parse_quantity

DNS_LABEL_MAX = 63
DNS_NAME_MAX = 253

DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS_1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# An OCI image reference: [registry[:port]/]path[:tag][@digest], lower-case path components.
IMAGE_REFERENCE = re.compile(
    r"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$"
)
# Flux Standard Duration, as tbon.connect_timeout takes it.
FLUX_DURATION = re.compile(r"^[0-9]+(\.[0-9]+)?(ms|s|m|h|d)?$")
TBON_TOPOLOGY = re.compile(r"^(kary:[1-9][0-9]*|binomial|mincrit(:[1-9][0-9]*)?)$")
NETWORK_INTERFACE = re.compile(r"^(\*|[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}|[0-9]{1,3}(\.[0-9]{1,3}){3})$")
# Env var names (C identifiers plus '-' and '.'), resource names (optionally domain-prefixed, e.g.
# nvidia.com/gpu), non-negative quantities (100m, 4Gi, 1.5, 2e3), label keys and values.
ENV_VAR_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
RESOURCE_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$")
QUANTITY = re.compile(r"^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
QUALIFIED_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
RESERVED_ENV_PREFIX = "MC_"


def label(value: str, pattern: re.Pattern[str], kind: str) -> str:
    if len(value) > DNS_LABEL_MAX:
        raise ValueError(f"must be {kind} of at most {DNS_LABEL_MAX} characters (it has {len(value)})")
    if not pattern.match(value):
        start = "a letter" if pattern is DNS_1035_LABEL else "a letter or digit"
        raise ValueError(f"must be {kind}: lower-case letters, digits and '-', starting with {start}")
    return value


def subdomain(value: str, problem: str | None = None) -> str:
    if len(value) > DNS_NAME_MAX or not DNS_1123_SUBDOMAIN.match(value):
        raise ValueError(problem or f"{value!r} must be a DNS name: lower-case letters, digits, '-' and '.'")
    return value


def image(value: str) -> str:
    if not IMAGE_REFERENCE.match(value):
        raise ValueError("must be an image reference like registry/path:tag")
    return value


def flux_duration(value: str) -> str:
    if not FLUX_DURATION.match(value):
        raise ValueError("must be a Flux duration like 5s, 500ms, 2m or 1h")
    return value


def absolute_path(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError("must be an absolute path")
    return value


def clear_of(path: str, reserved: tuple[str, ...]) -> str:
    """A mount path that neither hides nor lands inside one of the `reserved` directories."""
    for own in reserved:
        if path == own or path.startswith(own + "/") or own.startswith(path.rstrip("/") + "/"):
            raise ValueError(f"{path} overlaps {own}, where the MiniCluster mounts its own files")
    return path


def shell_words(value: str) -> list[str]:
    """The words of a shell line, as the entrypoint will pass them (no shell runs them)."""
    try:
        return shlex.split(joined_lines(value))
    except ValueError as error:
        raise ValueError(f"cannot be split into words like a shell line: {error}") from None


def joined_lines(text: str) -> str:
    """`text` with each backslash at a line's end taken out with its line break, as a shell reads it
    (shlex would make the line break a word of its own), but inside single quotes, where it stays."""
    kept: list[str] = []
    quote: str | None = None
    index = 0
    while index < len(text):
        char, following = text[index], text[index + 1 : index + 2]
        if char == "\\" and quote != "'":
            if following != "\n":
                kept.append(text[index : index + 2])  # an escape: the next character goes with it
            index += 2
            continue
        if char in "'\"" and quote in (None, char):
            quote = None if quote else char
        kept.append(char)
        index += 1
    return "".join(kept)


def shell_lines(text: str) -> list[str]:
    """The commands of a script, a line each as a shell reads them: a backslash at a line's end joins
    the next line, and a line break inside quotes is part of its word. Blank lines and comment lines
    are left out."""
    text = joined_lines(text)
    lines: list[str] = []
    quote: str | None = None
    start = index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and quote != "'":
            index += 2
            continue
        if char in "'\"" and quote in (None, char):
            quote = None if quote else char
        elif char == "\n" and quote is None:
            lines.append(text[start:index])
            start = index + 1
        index += 1
    lines.append(text[start:])
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


SHELL_OPERATOR_CHARACTERS = "|&;<>"
"""What a shell acts on, outside quotes: pipes, lists (&&, ||, ;, &) and redirections."""
SHELL_EXPANSION = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|[{(]|[0-9#?*@$!-])|`")
"""What a shell expands outside quotes: $NAME, ${...}, $(...), the special parameters, `...`."""


def shell_syntax(line: str) -> str | None:
    """The first thing a shell would act on in `line`, outside quotes and not escaped (an operator run,
    a line break between words, or the start of an expansion), or None. Split like a shell line without
    a shell, it stays plain text, which the program then takes as an argument; line breaks only part
    words."""
    line = joined_lines(line).strip()
    quote: str | None = None
    index = 0
    while index < len(line):
        char = line[index]
        if quote is not None:
            if char == quote:
                quote = None
            elif char == "\\" and quote == '"':
                index += 1
        elif char in "'\"":
            quote = char
        elif char == "\\":
            index += 1
        elif char == "\n":
            return char
        elif char in SHELL_OPERATOR_CHARACTERS:
            end = index
            while end < len(line) and line[end] in SHELL_OPERATOR_CHARACTERS:
                end += 1
            return line[index:end]
        elif expansion := SHELL_EXPANSION.match(line, index):
            return expansion.group()
        index += 1
    return None


STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
"""With hugepages-<size>, the only names without a domain that the API server takes on a container."""


def container_resources(value: Mapping[str, str | int | float]) -> dict[str, str]:
    """A container's requests or limits, with names the API server takes on a container."""
    for name in value:
        if (
            RESOURCE_NAME.match(name)
            and "/" not in name
            and name not in STANDARD_CONTAINER_RESOURCES
            and (not name.startswith("hugepages-"))
        ):
            raise ValueError(
                f"{name!r} is not a standard resource for containers (cpu, memory, ephemeral-storage, "
                f"hugepages-<size>), and an extended resource needs its domain: nvidia.com/{name}, amd.com/{name}"
            )
    return quantities(value)


def quantities(value: Mapping[str, str | int | float]) -> dict[str, str]:
    for name, quantity in value.items():
        if not RESOURCE_NAME.match(name):
            raise ValueError(f"{name!r} is not a resource name (cpu, memory, nvidia.com/gpu, ...)")
        if not QUANTITY.match(str(quantity)):
            raise ValueError(f"{name}: {quantity!r} is not a Kubernetes quantity (like 500m, 4, 8Gi)")
    return {name: str(quantity) for name, quantity in value.items()}


def quantity(value: str | int | float) -> Decimal:
    """A Kubernetes quantity's value (500m is 0.5, 1Gi is 1073741824)."""
    return Decimal(parse_quantity(value))  # type: ignore[no-untyped-call]


def extended_resource(name: str) -> bool:
    """A resource outside Kubernetes' own: a domain-qualified name (nvidia.com/gpu) not in kubernetes.io."""
    return "/" in name and not name.split("/", 1)[0].endswith("kubernetes.io")


def gpu_names(amounts: Mapping[str, object]) -> list[str]:
    """The GPU resources among requests or limits: by Kubernetes device plugins' convention, the
    extended resources named <vendor>/gpu."""
    return sorted(name for name in amounts if extended_resource(name) and name.endswith("/gpu"))


def extended_resource_name(value: str) -> str:
    """A name the API server takes for an extended resource (a device plugin's): domain/name, the
    domain not Kubernetes' own, and no `requests.` prefix (that is a quota's spelling)."""
    if not (RESOURCE_NAME.match(value) and extended_resource(value)) or value.startswith("requests."):
        raise ValueError("must be an extended resource name like nvidia.com/gpu or amd.com/gpu (domain/name)")
    return value


def key_path(loc: Iterable[str | int]) -> str:
    """A key as users write it, from its parts: list positions in brackets (containers[0].image)."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f"{'.' if path else ''}{part}"
    return path


def idset(ids: Iterable[int]) -> str:
    """RFC 22 idset of sorted ids, as Flux writes them: runs of consecutive ids as ranges (0-3,7)."""
    runs: list[list[int]] = []
    for item in ids:
        if runs and item == runs[-1][-1] + 1:
            runs[-1].append(item)
        else:
            runs.append([item])
    return ",".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def env_names(names: list[str]) -> None:
    for name in names:
        if not ENV_VAR_NAME.match(name):
            raise ValueError(f"{name!r} is not a valid environment variable name")
        if name.startswith(RESERVED_ENV_PREFIX):
            raise ValueError(f"{name!r}: names starting {RESERVED_ENV_PREFIX} are reserved for the entrypoint")


def labels(value: Mapping[str, str], reserved_prefix: str | None = None) -> dict[str, str]:
    for key, item in value.items():
        if not QUALIFIED_NAME.match(key):
            raise ValueError(f"{key!r} is not a valid label key")
        if reserved_prefix and key.startswith(reserved_prefix):
            raise ValueError(f"{key!r}: keys starting {reserved_prefix} are set by the MiniCluster itself")
        if not LABEL_VALUE.match(str(item)):
            raise ValueError(f"{key}: {item!r} is not a valid label value (at most 63 of [A-Za-z0-9-_.])")
    return {key: str(item) for key, item in value.items()}


def annotation_keys(value: Mapping[str, str]) -> dict[str, str]:
    for key in value:
        if not QUALIFIED_NAME.match(key):
            raise ValueError(f"{key!r} is not a valid annotation key")
    return {key: str(item) for key, item in value.items()}


def text(value: object) -> str:
    """Env values and the like: YAML numbers and booleans as the text a shell would see."""
    return str(value).lower() if isinstance(value, bool) else str(value)
