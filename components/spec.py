"""The validated MiniCluster configuration: one pydantic model for the whole stack config.

Pure: no Pulumi, no Kubernetes client. `load_spec` turns raw stack config (``minicluster:*`` keys, values
as Pulumi hands them over: strings, JSON strings for structured values, or native YAML values) into a
`MiniClusterSpec`, or raises `ConfigError` listing every problem at once, each naming the key as the user
writes it.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from components.certificate import CertificateError, parse

NAMESPACE = "minicluster"
"""The Pulumi config namespace (the project name in Pulumi.yaml)."""

MAX_INDEXED_COMPLETIONS = 100_000
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

Mode = Literal["submit", "launcher", "batch", "interactive"]
Keygen = Literal["pod", "local"]
SuccessPolicy = Literal["all", "rank0"]
Port = Annotated[int, Field(ge=1, le=65535)]
Seconds = Annotated[int, Field(ge=1, le=7 * 24 * 3600)]
# Kubernetes' own rules: env var names (C identifiers plus '-' and '.'), resource names (optionally
# domain-prefixed, e.g. nvidia.com/gpu) and non-negative quantities (100m, 4Gi, 1.5, 2e3).
ENV_VAR_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
RESOURCE_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$")
QUANTITY = re.compile(r"^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
RESERVED_ENV_PREFIX = "MC_"


class ConfigError(ValueError):
    """Invalid stack config. `problems` holds one line per problem, each naming its config key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid MiniCluster stack config:\n" + "\n".join(f"  - {p}" for p in problems))


class _Model(BaseModel):
    # Field docstrings become descriptions: the README's configuration reference is generated from them.
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True, use_attribute_docstrings=True
    )


class Hooks(_Model):
    """Shell snippets run by every pod's entrypoint (bash) around the broker."""

    init: str | None = None
    """Runs first, before the rank is known or anything is set up."""
    pre: str | None = None
    """Runs after set-up, right before the broker starts."""
    post: str | None = None
    """Runs after the broker exits; MC_EXIT_STATUS holds its exit status."""


class Resources(_Model):
    """Compute resources of each broker container, as Kubernetes quantities."""

    requests: dict[str, str | int | float] = Field(default_factory=dict)
    """What the scheduler reserves per pod, e.g. {cpu: "4", memory: 8Gi}."""
    limits: dict[str, str | int | float] = Field(default_factory=dict)
    """Upper bounds per pod, e.g. {memory: 8Gi, nvidia.com/gpu: "1"}."""

    @field_validator("requests", "limits")
    @classmethod
    def _quantities(cls, value: dict[str, str | int | float]) -> dict[str, str]:
        for name, quantity in value.items():
            if not RESOURCE_NAME.match(name):
                raise ValueError(f"{name!r} is not a resource name (cpu, memory, nvidia.com/gpu, ...)")
            if not QUANTITY.match(str(quantity)):
                raise ValueError(f"{name}: {quantity!r} is not a Kubernetes quantity (like 500m, 4, 8Gi)")
        return {name: str(quantity) for name, quantity in value.items()}


class Logging(_Model):
    """How chatty and how strict the entrypoint is (names follow the flux-operator's `logging`)."""

    quiet: bool = False
    """Print none of the entrypoint's own progress lines."""
    strict: bool = False
    """Run the entrypoint and hooks under `set -euo pipefail`: the first failing step stops the pod."""
    debug: bool = False
    """Trace every entrypoint command (`set -x`)."""
    timed: bool = False
    """Report how long the broker ran."""


class MiniClusterSpec(_Model):
    """The whole stack config. Field docstrings feed the README's configuration reference."""

    name: str
    """MiniCluster name (DNS-1035 label); pods are `<name>-<rank>`. Default: the stack name."""
    namespace: str = "default"
    """Kubernetes namespace for every object (must exist)."""
    image: str
    """Container image with Flux installed, used by every broker pod (and by the keygen pod)."""
    command: str | None = None
    """Command rank 0 runs in the instance, split like a shell line. Absent: a persistent cluster."""
    size: int = Field(1, ge=1, le=MAX_INDEXED_COMPLETIONS)
    """Number of pods, each running one Flux broker."""
    max_size: int | None = Field(None, ge=1, le=MAX_INDEXED_COMPLETIONS)
    """Largest size the instance can grow to (hostlist length). Default: size."""
    min_size: int | None = Field(None, ge=1, le=MAX_INDEXED_COMPLETIONS)
    """Brokers that must be online before rank 0 runs the command (broker.quorum). Default: size."""
    tasks: int = Field(1, ge=1)
    """Tasks for `flux submit -n` (the command's process count)."""
    mode: Mode = "submit"
    """submit: `flux submit --watch` the command; launcher: the command is flux start's initial program;
    batch: each command line is a `flux submit` inside one `flux batch`; interactive: like submit, then
    the instance stays up."""
    working_dir: str | None = None
    """Working directory of the broker container (and so of the command). Default: the image's."""
    submit_flags: list[str] = Field(default_factory=list)
    """Extra arguments for `flux submit` / `flux batch`, one list item per argument."""
    flux_path: str = "flux"
    """The flux executable: a name on PATH or an absolute path."""
    service_name: str | None = None
    """Name of the headless Service (DNS-1035 label). Default: the MiniCluster name."""
    network_interface: str = "eth0"
    """Interface the brokers bind to (`*` for all)."""
    cluster_domain: str = "cluster.local"
    """The cluster's DNS domain, used in the brokers' connect URI."""
    port: Port = 8050
    """TCP port of the Flux overlay network."""
    log_level: int = Field(6, ge=0, le=7)
    """Broker stderr log level (0 emergencies only … 7 debug)."""
    connect_timeout: str = "5s"
    """tbon.connect_timeout: how long one connect try to the parent broker may take."""
    topology: str | None = None
    """tbon.topo: overlay tree shape, e.g. `kary:16` or `binomial`. Default: Flux's own."""
    worker_retries: int = Field(10, ge=1, le=1000)
    """How many times a worker broker is started before its pod fails."""
    backoff_limit: int = Field(0, ge=0, le=1000)
    """Job backoffLimit: pod failures tolerated before the Job fails (0: the first failure fails it)."""
    success_policy: SuccessPolicy = "all"
    """all: the Job succeeds when every pod exits 0 (workers do once rank 0 shuts down; any cluster);
    rank0: successPolicy ends the Job as soon as rank 0 succeeds (Kubernetes >= 1.31)."""
    job_timeout: Seconds = 3600
    """Seconds `pulumi up` waits for the Job to complete (with a command) or its pods to run."""
    keygen: Keygen = "pod"
    """How the CURVE certificate is made: pod runs `flux keygen` in the cluster; local uses pyzmq."""
    keygen_image: str | None = None
    """Image for the keygen pod. Default: image."""
    keygen_timeout: Seconds = 300
    """Seconds the keygen pod may take, image pull included."""
    certificate_rotation: int = Field(0, ge=0)
    """Change this number to make a new keypair (the Job is then replaced)."""
    curve_certificate: SecretStr | None = None
    """Your own zcert certificate text (set with `pulumi config set --secret`): no keygen at all."""
    environment: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """Extra environment variables for every broker container (names starting MC_ are reserved)."""
    resources: Resources = Field(default_factory=Resources)
    """requests and limits for every broker container."""
    hooks: Hooks = Field(default_factory=Hooks)
    """Shell snippets run by the entrypoint: init, pre, post."""
    logging: Logging = Field(default_factory=Logging)
    """Entrypoint logging: quiet, strict, debug, timed."""

    # -- field rules ------------------------------------------------------------------------------

    @field_validator("name", "service_name")
    @classmethod
    def _dns_1035_label(cls, value: str | None) -> str | None:
        if value is not None:
            _check_label(value, DNS_1035_LABEL, "a DNS-1035 label")
        return value

    @field_validator("namespace")
    @classmethod
    def _dns_1123_label(cls, value: str) -> str:
        _check_label(value, DNS_1123_LABEL, "a DNS-1123 label")
        return value

    @field_validator("image", "keygen_image")
    @classmethod
    def _image_reference(cls, value: str | None) -> str | None:
        if value is not None and not IMAGE_REFERENCE.match(value):
            raise ValueError("must be an image reference like registry/path:tag")
        return value

    @field_validator("command")
    @classmethod
    def _shell_words(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            words = shlex.split(value, comments=False)
        except ValueError as error:
            raise ValueError(f"cannot be split into words like a shell line: {error}") from None
        if not words:
            raise ValueError("must not be empty (leave it unset for a persistent cluster)")
        return value

    @field_validator("curve_certificate")
    @classmethod
    def _usable_certificate(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            try:
                parse(value.get_secret_value())
            except CertificateError as error:  # its messages never contain key material
                raise ValueError(str(error)) from None
        return value

    @field_validator("environment")
    @classmethod
    def _env_names(cls, value: dict[str, Any]) -> dict[str, str]:
        for name in value:
            if not ENV_VAR_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid environment variable name")
            if name.startswith(RESERVED_ENV_PREFIX):
                raise ValueError(f"{name!r}: names starting {RESERVED_ENV_PREFIX} are reserved for the entrypoint")
        return {name: str(item).lower() if isinstance(item, bool) else str(item) for name, item in value.items()}

    @field_validator("submit_flags")
    @classmethod
    def _one_line_each(cls, value: list[str]) -> list[str]:
        if any("\n" in flag or not flag for flag in value):
            raise ValueError("each item must be a non-empty, single-line argument")
        return value

    @field_validator("flux_path")
    @classmethod
    def _executable(cls, value: str) -> str:
        if not re.match(r"^[^\s'\"$`]+$", value):
            raise ValueError("must be a command name or absolute path without spaces or quotes")
        return value

    @field_validator("working_dir")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError("must be an absolute path")
        return value

    @field_validator("network_interface")
    @classmethod
    def _interface(cls, value: str) -> str:
        if not NETWORK_INTERFACE.match(value):
            raise ValueError("must be an interface name (eth0), `*` or an IPv4 address")
        return value

    @field_validator("cluster_domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        if len(value) > DNS_NAME_MAX or not DNS_1123_SUBDOMAIN.match(value):
            raise ValueError("must be a DNS name like cluster.local")
        return value

    @field_validator("connect_timeout")
    @classmethod
    def _duration(cls, value: str) -> str:
        if not FLUX_DURATION.match(value):
            raise ValueError("must be a Flux duration like 5s, 500ms or 2m")
        return value

    @field_validator("topology")
    @classmethod
    def _topology(cls, value: str | None) -> str | None:
        if value is not None and not TBON_TOPOLOGY.match(value):
            raise ValueError("must be kary:K, binomial or mincrit[:K]")
        return value

    # -- rules across fields ----------------------------------------------------------------------

    @model_validator(mode="after")
    def _consistent(self) -> MiniClusterSpec:
        problems = [p for p in (*self._size_problems(), *self._name_problems(), *self._mode_problems()) if p]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def _size_problems(self) -> list[str]:
        return [
            f"minicluster:maxSize ({self.max_size}) must be >= minicluster:size ({self.size})"
            if self.max_size is not None and self.max_size < self.size
            else "",
            f"minicluster:minSize ({self.min_size}) must be <= minicluster:size ({self.size})"
            if self.min_size is not None and self.min_size > self.size
            else "",
        ]

    def _name_problems(self) -> list[str]:
        last_host = self.host(self.largest_size - 1)
        pod_fqdn = f"{last_host}.{self.service}.{self.namespace}.svc.{self.cluster_domain}"
        return [
            f"minicluster:name: the last pod hostname {last_host!r} is {len(last_host)} characters; "
            f"hostnames are DNS labels of at most {DNS_LABEL_MAX} (shorten the name or maxSize)"
            if len(last_host) > DNS_LABEL_MAX
            else "",
            f"minicluster:name: the pod DNS name {pod_fqdn!r} is longer than {DNS_NAME_MAX} characters"
            if len(pod_fqdn) > DNS_NAME_MAX
            else "",
        ]

    def _mode_problems(self) -> list[str]:
        needs_command = self.mode in ("launcher", "batch")
        return [
            f"minicluster:mode {self.mode!r} needs minicluster:command"
            if needs_command and self.command is None
            else "",
            "minicluster:curveCertificate is set, so minicluster:keygen 'local' has nothing to do; unset one"
            if self.curve_certificate is not None and self.keygen == "local"
            else "",
        ]

    # -- derived values (the one place each is computed) ------------------------------------------

    @property
    def largest_size(self) -> int:
        return self.max_size or self.size

    @property
    def service(self) -> str:
        return self.service_name or self.name

    @property
    def hostlist(self) -> str:
        """RFC 29 hostlist of every broker the instance may have, in rank order."""
        last = self.largest_size - 1
        return self.host(0) if last == 0 else f"{self.name}-[0-{last}]"

    def host(self, rank: int) -> str:
        return f"{self.name}-{rank}"

    @property
    def rank0_host(self) -> str:
        return self.host(0)

    @property
    def quorum(self) -> int | None:
        """broker.quorum, when it must differ from Flux's default of every rank in the hostlist."""
        if self.min_size is not None:
            return self.min_size
        return self.size if self.largest_size > self.size else None

    @property
    def persistent(self) -> bool:
        """The instance outlives any command: pods run until `flux shutdown` or `pulumi destroy`."""
        return self.command is None or self.mode == "interactive"

    @property
    def command_args(self) -> list[str]:
        return shlex.split(self.command) if self.command else []

    @property
    def command_lines(self) -> list[str]:
        """For batch mode: one command per non-blank line."""
        return [line.strip() for line in (self.command or "").splitlines() if line.strip()]

    @property
    def connect_uri(self) -> str:
        return f"tcp://%h.{self.service}.{self.namespace}.svc.{self.cluster_domain}:%p"

    @property
    def bind_uri(self) -> str:
        return f"tcp://{self.network_interface}:%p"


def _check_label(value: str, pattern: re.Pattern[str], kind: str) -> None:
    if len(value) > DNS_LABEL_MAX:
        raise ValueError(f"must be {kind} of at most {DNS_LABEL_MAX} characters (it has {len(value)})")
    if not pattern.match(value):
        start = "a letter" if pattern is DNS_1035_LABEL else "a letter or digit"
        raise ValueError(f"must be {kind}: lower-case letters, digits and '-', starting with {start}")


# -- loading stack config -------------------------------------------------------------------------

SECRET_FIELDS = {"curve_certificate"}


def config_keys(model: type[BaseModel] = MiniClusterSpec) -> dict[str, str]:
    """Config key (camelCase, as users write it) -> field name."""
    return {(field.alias or name): name for name, field in model.model_fields.items()}


def load_spec(raw: Mapping[str, Any], stack: str) -> MiniClusterSpec:
    """Validate raw stack config. Keys outside the `minicluster:` namespace (e.g. `kubernetes:*`) are
    the providers' business and ignored here."""
    prefix = f"{NAMESPACE}:"
    values = {key[len(prefix) :]: value for key, value in raw.items() if key.startswith(prefix)}
    known = config_keys()
    problems = [_unknown_key(key, list(known)) for key in values if key not in known]
    decoded = {key: _decode(known[key], value) for key, value in values.items() if key in known}
    decoded.setdefault("name", stack)
    try:
        spec = MiniClusterSpec.model_validate(decoded)
    except ValidationError as error:
        problems.extend(_describe(error))
    if problems:
        raise ConfigError(problems)
    return spec


def _unknown_key(key: str, known: list[str]) -> str:
    near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"; did you mean minicluster:{near[0]}?" if near else ""
    return f"minicluster:{key}: unknown config key{hint}"


def _decode(field_name: str, value: Any) -> Any:
    """Pulumi hands structured values (objects, lists) to the program as JSON text."""
    if not isinstance(value, str) or _is_text_field(field_name):
        return value
    if value.lstrip().startswith(("{", "[")):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _is_text_field(field_name: str) -> bool:
    annotation = MiniClusterSpec.model_fields[field_name].annotation
    return annotation in (str, str | None, SecretStr, SecretStr | None)


def _describe(error: ValidationError) -> list[str]:
    problems = []
    for item in error.errors(include_url=False):
        loc = [str(part) for part in item["loc"]]
        message = item["msg"].removeprefix("Value error, ")
        if not loc:  # a rule across fields: its message names its keys already
            problems.extend(message.split("\n"))
            continue
        key = f"{NAMESPACE}:{'.'.join(loc)}"
        if item["type"] == "extra_forbidden":
            problems.append(_nested_unknown_key(loc))
            continue
        shown = "" if loc[0] in {to_camel(f) for f in SECRET_FIELDS} else f" (got {item.get('input')!r})"
        problems.append(f"{key}: {message}{shown}")
    return problems


def _nested_unknown_key(loc: list[str]) -> str:
    model: type[BaseModel] = MiniClusterSpec
    for part in loc[:-1]:
        field = model.model_fields.get(config_keys(model).get(part, part))
        if field is None or not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            break
        model = field.annotation
    near = difflib.get_close_matches(loc[-1], list(config_keys(model)), n=1, cutoff=0.6)
    hint = f"; did you mean {NAMESPACE}:{'.'.join([*loc[:-1], near[0]])}?" if near else ""
    return f"{NAMESPACE}:{'.'.join(loc)}: unknown config key{hint}"
