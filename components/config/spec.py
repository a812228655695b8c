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
import tomllib
import types
import typing
from collections.abc import Collection, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator, model_validator

from components.config import paths, rules
from components.config.certificate import CertificateError, parse
from components.config.rules import DNS_LABEL_MAX, DNS_NAME_MAX
from components.config.settings import (
    ContainerSettings,
    FluxView,
    Hooks,
    Logging,
    Pod,
    RestfulApi,
    Sidecar,
    StateVolume,
    Volume,
)

NAMESPACE = "minicluster"
"""The Pulumi config namespace (the project name in Pulumi.yaml)."""

MAX_INDEXED_COMPLETIONS = 100_000
BROKER_CONTAINER = "flux-broker"
RESERVED_CONTAINERS = {BROKER_CONTAINER, paths.FLUX_VIEW}
RESERVED_VOLUMES = set(paths.OWN_VOLUMES)

Mode = Literal["submit", "launcher", "batch", "interactive"]
Keygen = Literal["pod", "local"]
SuccessPolicy = Literal["all", "rank0"]
QueuePolicy = Literal["fcfs", "easy", "hybrid", "conservative"]
Port = Annotated[int, Field(ge=1, le=65535)]
Seconds = Annotated[int, Field(ge=1, le=7 * 24 * 3600)]


class ConfigError(ValueError):
    """Invalid stack config. `problems` holds one line per problem, each naming its config key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid MiniCluster stack config:\n" + "\n".join(f"  - {p}" for p in problems))


class MiniClusterSpec(ContainerSettings):
    """The whole stack config. The Flux container's own settings (workingDir, environment, resources, ...)
    are top-level keys, inherited from ContainerSettings. Field docstrings feed the README's reference."""

    name: str
    """MiniCluster name (DNS-1035 label); pods are `<name>-<rank>`. Default: the stack name."""
    namespace: str = "default"
    """Kubernetes namespace for every object (must exist)."""
    image: str
    """Container image with Flux installed, used by every broker pod (and by the keygen pod)."""
    command: str | None = None
    """Command rank 0 runs in the instance, split like a shell line. Absent: a persistent cluster."""
    size: int = Field(1, ge=1, le=MAX_INDEXED_COMPLETIONS)
    """Number of pods, each running one Flux broker. On an elastic cluster (no command, interactive,
    launcher, the RESTful API) a change between minSize and maxSize resizes the running instance."""
    max_size: int | None = Field(None, ge=1, le=MAX_INDEXED_COMPLETIONS)
    """Largest size the instance can grow to (hostlist length; changing it replaces the Job). Default: size."""
    min_size: int | None = Field(None, ge=1, le=MAX_INDEXED_COMPLETIONS)
    """Smallest size it can shrink to, and the brokers that must be online before rank 0 runs the command
    (broker.quorum). Default: shrinking goes down to 1, and the quorum is the size."""
    shrink_policy: Literal["wait", "cancel"] = "wait"
    """When an elastic cluster shrinks, the ranks that go are drained first; wait: jobs running on them
    may finish (up to shrinkTimeout, else `pulumi up` stops and nothing shrinks); cancel: they are
    cancelled at once."""
    shrink_timeout: Seconds = 600
    """Seconds a shrink waits for the jobs on the ranks that go (shrinkPolicy wait), or for them to end
    once cancelled."""
    tasks: int = Field(1, ge=1)
    """Tasks for `flux submit -n` (the command's process count)."""
    mode: Mode = "submit"
    """submit: `flux submit --watch` the command; launcher: the command is flux start's initial program;
    batch: each command line is a `flux submit` inside one `flux batch`; interactive: like submit, then
    the instance stays up."""
    submit_flags: list[str] = Field(default_factory=list)
    """Extra arguments for `flux submit` / `flux batch`, one list item per argument."""
    batch_output: str | None = None
    """batch mode: a file in the pod (put it on a volume to outlive the pod) that keeps a copy of the
    jobs' output, which rank 0's log always shows."""
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
    schedule_timeout: Seconds = 180
    """Seconds a pod (the keygen pod, or the Job's) may stay unschedulable before `pulumi up` stops with
    the scheduler's reason, instead of waiting out keygenTimeout or jobTimeout."""
    certificate_rotation: int = Field(0, ge=0)
    """Change this number to make a new keypair (the Job is then replaced)."""
    curve_certificate: SecretStr | None = None
    """Your own zcert certificate text (set with `pulumi config set --secret`): no keygen at all."""
    hooks: Hooks = Field(default_factory=Hooks)
    """Shell snippets run by the entrypoint: init, pre, post."""
    logging: Logging = Field(default_factory=Logging)
    """Entrypoint logging: quiet, strict, debug, timed."""
    containers: list[Sidecar] = Field(default_factory=list)
    """Containers that run alongside the Flux container in every pod: native sidecars, started first and
    stopped when the Flux container exits."""
    volumes: dict[str, Volume] = Field(default_factory=dict)
    """Volumes by name (DNS-1123 label), mounted into the Flux container: PVCs, hostPath, ConfigMap,
    Secret or emptyDir."""
    pod: Pod = Field(default_factory=Pod)
    """Pod settings: labels, annotations, scheduling, service account, restart and DNS policy."""
    deadline_seconds: int | None = Field(None, ge=1)
    """Job activeDeadlineSeconds: the whole Job fails after this long."""
    job_labels: dict[str, str] = Field(default_factory=dict)
    """Labels on the Job itself, e.g. kueue.x-k8s.io/queue-name for Kueue."""
    suspend: bool = False
    """Create the Job suspended (a queue such as Kueue resumes it; Pulumi then leaves spec.suspend alone)."""
    queue_policy: QueuePolicy | None = None
    """Fluxion's queue policy (sched-fluxion-qmanager queue-policy). Default: Flux's (fcfs)."""
    broker_attributes: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """Extra broker attributes, each passed as -Skey=value."""
    broker_config: str | None = None
    """A complete broker.toml used instead of the generated one (see the README for what it must keep)."""
    option_flags: str | None = None
    """Flux option flags in one string, e.g. "-ompi=openmpi@5", added to submit (and the RESTful API)."""
    flux_view: FluxView = Field(default_factory=FluxView)
    """Flux from an init container, for application images without Flux."""
    restful_api: RestfulApi = Field(default_factory=RestfulApi)
    """The Flux RESTful API server on rank 0 of a persistent cluster."""
    admission: Literal["refuse", "warn", "off"] = "warn"
    """Before anything is created, check that the pods fit the cluster as it is (nodes, their free room,
    quotas): refuse stops `pulumi up` with what does not fit; warn says so and goes ahead (a cluster
    autoscaler may add room); off skips the check. With Kueue (jobLabels queue name and suspend) Kueue
    decides."""
    state_volume: StateVolume | None = None
    """A persistent cluster's state, kept by rank 0 on a volume: a replaced rank 0 (eviction, drain)
    restarts the same instance, with its queue and job history."""
    secret_keys: frozenset[str] = Field(default=frozenset(), exclude=True)
    """Not a config key: which config keys the stack marks secret (`pulumi config set --secret`), as
    load_spec found them. Their values reach the pods only through a Kubernetes Secret."""

    # -- field rules ------------------------------------------------------------------------------

    @field_validator("name", "service_name")
    @classmethod
    def _dns_1035_label(cls, value: str | None) -> str | None:
        return None if value is None else rules.label(value, rules.DNS_1035_LABEL, "a DNS-1035 label")

    @field_validator("namespace")
    @classmethod
    def _dns_1123_label(cls, value: str) -> str:
        return rules.label(value, rules.DNS_1123_LABEL, "a DNS-1123 label")

    @field_validator("image", "keygen_image")
    @classmethod
    def _image_reference(cls, value: str | None) -> str | None:
        return None if value is None else rules.image(value)

    @field_validator("command")
    @classmethod
    def _shell_words(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not rules.shell_words(value):
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

    @field_validator("submit_flags")
    @classmethod
    def _one_line_each(cls, value: list[str]) -> list[str]:
        if any("\n" in flag or not flag for flag in value):
            raise ValueError("each item must be a non-empty, single-line argument")
        return value

    @field_validator("batch_output")
    @classmethod
    def _batch_output_path(cls, value: str | None) -> str | None:
        return None if value is None else rules.absolute_path(value)

    @field_validator("flux_path")
    @classmethod
    def _executable(cls, value: str) -> str:
        if not re.match(r"^[^\s'\"$`]+$", value):
            raise ValueError("must be a command name or absolute path without spaces or quotes")
        return value

    @field_validator("network_interface")
    @classmethod
    def _interface(cls, value: str) -> str:
        if not rules.NETWORK_INTERFACE.match(value):
            raise ValueError("must be an interface name (eth0), `*` or an IPv4 address")
        return value

    @field_validator("cluster_domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        return rules.subdomain(value, "must be a DNS name like cluster.local")

    @field_validator("connect_timeout")
    @classmethod
    def _duration(cls, value: str) -> str:
        return rules.flux_duration(value)

    @field_validator("topology")
    @classmethod
    def _topology(cls, value: str | None) -> str | None:
        if value is not None and not rules.TBON_TOPOLOGY.match(value):
            raise ValueError("must be kary:K, binomial or mincrit[:K]")
        return value

    @field_validator("job_labels")
    @classmethod
    def _job_labels(cls, value: dict[str, str]) -> dict[str, str]:
        return rules.labels(value)

    @field_validator("broker_attributes")
    @classmethod
    def _attributes(cls, value: dict[str, Any]) -> dict[str, str]:
        for key, item in value.items():
            if not re.match(r"^[a-z][a-z0-9_.-]*$", key) or "\n" in rules.text(item):
                raise ValueError(f"{key!r}: attributes are lower-case dotted names with single-line values")
        return {key: rules.text(item) for key, item in value.items()}

    @field_validator("broker_config")
    @classmethod
    def _broker_toml(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            bootstrap = tomllib.loads(value).get("bootstrap")
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"is not valid TOML: {error}") from None
        if not isinstance(bootstrap, dict) or not {"hosts", "curve_cert"} <= bootstrap.keys():
            raise ValueError("needs a [bootstrap] table with hosts and curve_cert, or the brokers cannot join")
        return value

    @field_validator("option_flags")
    @classmethod
    def _option_words(cls, value: str | None) -> str | None:
        if value is not None:
            rules.shell_words(value)
        return value

    @field_validator("volumes")
    @classmethod
    def _volume_names(cls, value: dict[str, Volume]) -> dict[str, Volume]:
        for name in value:
            rules.label(name, rules.DNS_1123_LABEL, f"a DNS-1123 label ({name!r})")
            if name in RESERVED_VOLUMES:
                raise ValueError(f"{name!r} is a volume name the MiniCluster uses itself")
        mount_paths = [volume.path for volume in value.values()]
        if len(set(mount_paths)) != len(mount_paths):
            raise ValueError("two volumes share a mount path")
        return value

    # -- rules across fields ----------------------------------------------------------------------

    @model_validator(mode="after")
    def _consistent(self) -> MiniClusterSpec:
        checks = (
            self._size_problems, self._name_problems, self._mode_problems, self._pod_problems, self._state_problems,
        )  # fmt: skip
        problems = [problem for check in checks for problem in check() if problem]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def _size_problems(self) -> list[str]:
        return [
            f"minicluster:size ({self.size}) is above minicluster:maxSize ({self.max_size}), the most hosts the "
            f"instance has: raise minicluster:maxSize to at least {self.size} too (that changes the hostlist, so "
            "the Job and its Flux instance are replaced)"
            if self.max_size is not None and self.max_size < self.size
            else "",
            f"minicluster:size ({self.size}) is below minicluster:minSize ({self.min_size}): lower "
            "minicluster:minSize to shrink further (the cluster is not replaced for that)"
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
            f"minicluster:batchOutput is for mode 'batch', not {self.mode!r}"
            if self.batch_output is not None and self.mode != "batch"
            else "",
            "minicluster:curveCertificate is set, so minicluster:keygen 'local' has nothing to do; unset one"
            if self.curve_certificate is not None and self.keygen == "local"
            else "",
        ]

    def _pod_problems(self) -> list[str]:
        names = [sidecar.name for sidecar in self.containers]
        problems = [
            f"minicluster:containers: two containers are named {name!r}" for name in set(names) if names.count(name) > 1
        ] + [
            f"minicluster:containers: {name!r} is the name of a container the MiniCluster adds itself"
            for name in names
            if name in RESERVED_CONTAINERS
        ]
        for index, sidecar in enumerate(self.containers):
            problems += [
                f"minicluster:containers[{index}].volumes: {volume!r} is not one of minicluster:volumes"
                for volume in sidecar.volumes
                if volume not in self.volumes
            ]
        api = self.restful_api
        if api.enabled and self.command is not None:
            problems.append(
                "minicluster:restfulApi runs as rank 0's program in a persistent cluster: "
                "unset minicluster:command or disable the API"
            )
        if api.enabled and len(self.api_service) > DNS_LABEL_MAX:
            problems.append(
                f"minicluster:name: the API Service name {self.api_service!r} is over {DNS_LABEL_MAX} characters"
            )
        if api.enabled and api.port == self.port:
            problems.append(f"minicluster:restfulApi.port {api.port} is the Flux overlay port (minicluster:port)")
        if self.flux_view.enabled and self.flux_view.path in {volume.path for volume in self.volumes.values()}:
            problems.append(f"minicluster:fluxView.path {self.flux_view.path} is also a volume's path")
        return problems

    def _state_problems(self) -> list[str]:
        volume = self.state_volume
        if volume is None:
            return []
        if not self.persistent:
            return [
                f"minicluster:stateVolume keeps a persistent instance's queue for a replaced rank 0; with "
                f"minicluster:command in mode {self.mode!r}, a replaced rank 0 runs the command again and has "
                "nothing to keep: unset one of them"
            ]
        one_node = self.largest_size == 1 or "kubernetes.io/hostname" in self.pod.node_selector
        pin = "pin every pod to one node (minicluster:pod.nodeSelector kubernetes.io/hostname)"
        if volume.host_path is not None and not one_node:
            return [
                "minicluster:stateVolume.hostPath is a different directory on each node, and a rank 0 replaced "
                f"on another node would not find its state: use claimName, or {pin}"
            ]
        if volume.access_mode == "ReadWriteOnce" and not one_node:
            return [
                "minicluster:stateVolume: a ReadWriteOnce claim mounts on one node only and every pod mounts it, "
                f"while the pods spread over nodes: use a ReadWriteMany claim, or {pin}"
            ]
        if one_node and self.pod.one_pod_per_node and self.largest_size > 1:
            return ["minicluster:stateVolume pins the pods to one node, and minicluster:pod.onePodPerNode spreads them"]
        return []

    # -- derived values (the one place each is computed) ------------------------------------------

    def is_secret(self, key: str) -> bool:
        """Whether the stack marks this config key (as users write it: `environment`) secret."""
        return key in self.secret_keys

    @property
    def largest_size(self) -> int:
        return self.max_size or self.size

    @property
    def service(self) -> str:
        return self.service_name or self.name

    @property
    def api_service(self) -> str:
        return f"{self.name}-api"

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
        return quorum(self.size, self.min_size, self.largest_size)

    @property
    def persistent(self) -> bool:
        """The instance outlives any command: pods run until `flux shutdown` or `pulumi destroy`."""
        return self.command is None or self.mode == "interactive"

    @property
    def elastic(self) -> bool:
        """Its size changes in place: the instance outlives the command, or the command is the launcher
        that submits into it. One-shot commands (submit, batch) start a new run at a new size."""
        return self.persistent or self.mode == "launcher"

    @property
    def all_submit_flags(self) -> list[str]:
        return [*self.submit_flags, *rules.shell_words(self.option_flags or "")]

    @property
    def command_args(self) -> list[str]:
        return rules.shell_words(self.command) if self.command else []

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


def quorum(size: int, min_size: int | None, largest_size: int) -> int | None:
    """broker.quorum at a given size, when it must differ from Flux's default of every rank in the
    hostlist: minSize if set, else every broker of the current size."""
    if min_size is not None:
        return min_size
    return size if largest_size > size else None


# -- loading stack config -------------------------------------------------------------------------

ALWAYS_SECRET = "curveCertificate"
"""Never echoed, whether or not the stack marks it secret."""
SECRETS_KEPT = (ALWAYS_SECRET, "environment", "command", "hooks")
"""The config keys whose values can stay secret: they reach the pods through Kubernetes Secrets only
(the certificate's, and the config Secret: environment by secretKeyRef, command and hooks as files)."""


def config_keys(model: type[BaseModel] = MiniClusterSpec) -> dict[str, str]:
    """Config key (camelCase, as users write it) -> field name."""
    return {(field.alias or name): name for name, field in model.model_fields.items() if not field.exclude}


def load_spec(raw: Mapping[str, Any], stack: str, secret_keys: Collection[str] = ()) -> MiniClusterSpec:
    """Validate raw stack config. Keys outside the `minicluster:` namespace (e.g. `kubernetes:*`) are
    the providers' business and ignored here. `secret_keys`: the full keys the stack marks secret."""
    prefix = f"{NAMESPACE}:"
    values = {key[len(prefix) :]: value for key, value in raw.items() if key.startswith(prefix)}
    secret = frozenset(key[len(prefix) :] for key in secret_keys if key.startswith(prefix)) & values.keys()
    known = config_keys()
    problems = [_unknown_key(key, list(known)) for key in values if key not in known]
    problems += [_secret_not_kept(key) for key in sorted(secret) if key in known and key not in SECRETS_KEPT]
    decoded = {key: _decode(known[key], value) for key, value in values.items() if key in known}
    decoded.setdefault("name", stack)
    try:
        spec = MiniClusterSpec.model_validate({**decoded, "secret_keys": secret})
    except ValidationError as error:
        problems.extend(_describe(error, secret | {ALWAYS_SECRET}))
    if problems:
        raise ConfigError(problems)
    return spec


def _secret_not_kept(key: str) -> str:
    kept = ", ".join(f"minicluster:{name}" for name in SECRETS_KEPT)
    return (
        f"minicluster:{key} is set as a secret, but it cannot stay secret: it becomes part of the objects' "
        "names, specs or labels, which Kubernetes shows to whoever can read them and Pulumi shows in every "
        f"preview. Set it without --secret (only {kept} can be secret)"
    )


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


def _describe(error: ValidationError, hidden: Collection[str]) -> list[str]:
    """One line per problem; the value is echoed, except for the keys in `hidden` (secrets)."""
    problems = []
    for item in error.errors(include_url=False):
        loc = list(item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        if not loc:  # a rule across fields: its message names its keys already
            problems.extend(message.split("\n"))
        elif item["type"] == "extra_forbidden":
            problems.append(_nested_unknown_key(loc))
        else:
            shown = "" if loc[0] in hidden else f" (got {item.get('input')!r})"
            problems.append(f"{NAMESPACE}:{_key_path(loc)}: {message}{shown}")
    return problems


def _key_path(loc: list[Any]) -> str:
    """The key as users write it: list positions in brackets (containers[0].image)."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f"{'.' if path else ''}{part}"
    return path


def _nested_unknown_key(loc: list[Any]) -> str:
    """Suggest the nearest key of the model the unknown one sits in (through lists and maps)."""
    model: type[BaseModel] = MiniClusterSpec
    skip_next = False
    for part in loc[:-1]:
        if skip_next:  # a list position or a map key
            skip_next = False
            continue
        field = model.model_fields.get(config_keys(model).get(str(part), str(part)))
        nested, reached_by = nested_model(field.annotation if field else None)
        if nested is None:
            break
        model, skip_next = nested, reached_by != ""
    near = difflib.get_close_matches(str(loc[-1]), list(config_keys(model)), n=1, cutoff=0.6)
    hint = f"; did you mean {NAMESPACE}:{_key_path([*loc[:-1], near[0]])}?" if near else ""
    return f"{NAMESPACE}:{_key_path(loc)}: unknown config key{hint}"


def nested_model(annotation: Any) -> tuple[type[BaseModel] | None, str]:
    """The model a field holds (also when optional), and how its keys are reached: "" (an object),
    "[]" (a list of them) or ".<name>" (a map of them). None when it holds no model."""
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    origin, args = typing.get_origin(annotation), list(typing.get_args(annotation))
    inner = args[-1] if origin in (list, dict) and args else None
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return inner, "[]" if origin is list else ".<name>"
    return None, ""
