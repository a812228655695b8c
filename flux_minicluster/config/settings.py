"""The nested parts of the config: containers and the pod (volumes.py and flux_extras.py hold the rest).
Pure pydantic models.

Names follow the flux-operator's MiniCluster where it has the same setting, so its users feel at
home. Every field's docstring feeds the README's configuration reference.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from flux_minicluster.config import affinity, kube_schema, rules
from flux_minicluster.config.types import Dns1123Label, Image, Text

ImagePullPolicy = Literal["Always", "IfNotPresent", "Never"]
EnvValue = str | int | float | bool


class Model(BaseModel):
    # Field docstrings are the keys' meanings: config/field_docs.py reads them for the README's reference.
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


class Hooks(Model):
    """Shell snippets run by every pod's entrypoint (bash) around the broker, each in a bash of its own;
    what one exports (`export OMP_NUM_THREADS=4`, `source setup-env.sh`) is the broker's and the
    command's environment from then on."""

    init: str | None = None
    """Runs first, before the rank is known or anything is set up."""
    pre: str | None = None
    """Runs after set-up, right before the broker starts: where to set up the command's environment."""
    post: str | None = None
    """Runs after the broker exits; MC_EXIT_STATUS holds its exit status."""


class Logging(Model):
    """How chatty and how strict the entrypoint is (names follow the flux-operator's `logging`)."""

    quiet: bool = False
    """Print none of the entrypoint's own progress lines."""
    strict: bool = False
    """Run the entrypoint and hooks under `set -euo pipefail`: the first failing step stops the pod."""
    debug: bool = False
    """Trace every entrypoint command (`set -x`)."""
    timed: bool = False
    """Report how long the broker ran."""


class Resources(Model):
    """Compute resources of a container, as Kubernetes quantities."""

    requests: dict[str, str | int | float] = Field(default_factory=dict)
    """What the scheduler reserves per pod, e.g. {cpu: "4", memory: 8Gi}."""
    limits: dict[str, str | int | float] = Field(default_factory=dict)
    """Upper bounds per pod, e.g. {memory: 8Gi, nvidia.com/gpu: "1"}."""

    @field_validator("requests", "limits")
    @classmethod
    def _quantities(cls, value: dict[str, str | int | float]) -> dict[str, str]:
        return rules.container_resources(value)

    @model_validator(mode="after")
    def _as_the_api_server_checks_them(self) -> Resources:
        """A request may not exceed its limit; an extended resource (nvidia.com/gpu) comes in whole
        units, is never overcommitted (its request is its limit), and so needs a limit."""
        for name, amount in {**self.requests, **self.limits}.items():
            if rules.extended_resource(name) and rules.quantity(amount) % 1:
                raise ValueError(f"{name} ({amount}) must be a whole number: an extended resource comes in units")
        for name, request in self.requests.items():
            limit = self.limits.get(name)
            if limit is not None and rules.quantity(request) > rules.quantity(limit):
                raise ValueError(f"requests.{name} ({request}) is above limits.{name} ({limit})")
            if rules.extended_resource(name) and (limit is None or rules.quantity(request) != rules.quantity(limit)):
                raise ValueError(
                    f"requests.{name} ({request}) needs limits.{name} equal to it: Kubernetes never overcommits "
                    "an extended resource (setting only limits is enough)"
                )
        return self


class SecretKey(Model):
    """One key of an existing Kubernetes Secret."""

    name: str
    """The Secret's name (in the MiniCluster's namespace)."""
    key: str
    """The key within the Secret."""

    @field_validator("name")
    @classmethod
    def _secret_name(cls, value: str) -> str:
        return rules.subdomain(value)


class Lifecycle(Model):
    """Container lifecycle hooks, as shell commands (run with /bin/sh -c)."""

    post_start: str | None = None
    """Runs right after the container starts (alongside the entrypoint)."""
    pre_stop: str | None = None
    """Runs before the container is stopped."""


class ContainerSettings(Model):
    """Settings every container of the pod can have: the Flux container takes them as top-level keys,
    each of `containers` (the sidecars) within its own entry."""

    working_dir: str | None = None
    """Working directory (for the Flux container: of the command too). Default: the image's."""
    environment: dict[str, EnvValue] = Field(default_factory=dict)
    """Extra environment variables (names starting MC_ are reserved)."""
    environment_from_secrets: dict[str, SecretKey] = Field(default_factory=dict)
    """Environment variables read from existing Secrets: {VAR: {name: secret, key: key}}."""
    resources: Resources = Field(default_factory=Resources)
    """requests and limits."""
    ports: list[int] = Field(default_factory=list)
    """Extra container ports to declare (the Flux overlay port is always declared)."""
    image_pull_policy: ImagePullPolicy | None = None
    """Always, IfNotPresent or Never. Default: Kubernetes' (Always for :latest, else IfNotPresent)."""
    security_context: dict[str, Any] | None = None
    """A Kubernetes container securityContext, as Kubernetes spells it (e.g. {privileged: true} for some
    fabrics), checked against Kubernetes' schema of it."""
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    """postStart and preStop shell commands."""

    @field_validator("security_context")
    @classmethod
    def _security_context(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else kube_schema.as_kubernetes_has_it("io.k8s.api.core.v1.SecurityContext", value)

    @field_validator("working_dir")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        return None if value is None else rules.absolute_path(value)

    @field_validator("environment")
    @classmethod
    def _env(cls, value: dict[str, EnvValue]) -> dict[str, str]:
        rules.env_names(list(value))
        return {name: rules.text(item) for name, item in value.items()}

    @field_validator("environment_from_secrets")
    @classmethod
    def _env_from_secrets(cls, value: dict[str, SecretKey]) -> dict[str, SecretKey]:
        rules.env_names(list(value))
        return value

    @field_validator("ports")
    @classmethod
    def _ports(cls, value: list[int]) -> list[int]:
        if any(not 1 <= port <= 65535 for port in value):
            raise ValueError("ports must be between 1 and 65535")
        if len(set(value)) != len(value):
            raise ValueError("ports must not repeat")
        return value


class Sidecar(ContainerSettings):
    """A container that runs alongside the Flux container in every broker pod, as a Kubernetes native
    sidecar: it starts first and is stopped when the Flux container exits, so the Job can complete."""

    name: Dns1123Label
    """Container name (DNS-1123 label), unique within the pod."""
    image: Image
    """Its image."""
    command: list[str] | None = None
    """Its command (argv). Default: the image's entrypoint."""
    args: list[str] | None = None
    """Its arguments. Default: the image's."""
    volumes: list[str] = Field(default_factory=list)
    """Names of `minicluster:volumes` to mount here too, at the same paths."""
    run_flux: bool = False
    """Only the MiniCluster's own container (minicluster:image) runs Flux; kept for operator users."""
    # Only False is accepted: the field exists so that a config copied from the flux-operator's
    # MiniCluster (whose containers have runFlux) gets a clear answer. Remove when: the operator's
    # API drops containers[].runFlux (it still has it in v1alpha2).

    @field_validator("run_flux")
    @classmethod
    def _one_flux_container(cls, value: bool) -> bool:
        if value:
            raise ValueError("only one container runs Flux, the one given by minicluster:image and minicluster:command")
        return value


class Toleration(Model):
    """A Kubernetes toleration, checked as the API server checks it."""

    key: str | None = None
    """The taint key it tolerates; unset (with operator Exists): every taint."""
    operator: Literal["Equal", "Exists"] = "Equal"
    """Equal: the taint's value must be `value`; Exists: any value (then no `value`)."""
    value: Text | None = None
    """The taint value, for operator Equal."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    """The taint effect it tolerates; unset: every effect."""
    toleration_seconds: int | None = None
    """For effect NoExecute: how long a pod stays once the taint appears (whole seconds)."""

    @model_validator(mode="after")
    def _as_the_api_server_checks_it(self) -> Toleration:
        if self.operator == "Exists" and self.value:
            raise ValueError("operator Exists matches any value: remove value, or use operator Equal")
        if not self.key and self.operator != "Exists":
            raise ValueError("a toleration without a key tolerates every taint, and needs operator Exists")
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            raise ValueError("tolerationSeconds is for effect NoExecute only")
        return self

    def manifest(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


class Pod(Model):
    """Settings of every broker pod (names follow the flux-operator's `pod`)."""

    labels: dict[str, Text] = Field(default_factory=dict)
    """Extra pod labels (app.kubernetes.io/* are the MiniCluster's own)."""
    annotations: dict[str, Text] = Field(default_factory=dict)
    """Pod annotations."""
    node_selector: dict[str, Text] = Field(default_factory=dict)
    """Schedule only on nodes with these labels."""
    tolerations: list[Toleration] = Field(default_factory=list)
    """Kubernetes tolerations (key, operator, value, effect, tolerationSeconds)."""
    affinity: dict[str, Any] | None = None
    """A Kubernetes affinity, as Kubernetes spells it (nodeAffinity, podAffinity, podAntiAffinity), checked
    as the API server checks it."""
    one_pod_per_node: bool = False
    """Never put two brokers on one node (a required pod anti-affinity on the hostname)."""
    service_account_name: str | None = None
    """Service account the pods run as."""
    automount_service_account_token: bool | None = None
    """Mount the service account's API token in every container of the broker pods, where every Flux job
    can read it. Default: false, as Flux needs no Kubernetes API (with autoscale, the autoscaler's own
    container mounts its token by itself); true with serviceAccountName set (Kubernetes' default)."""
    runtime_class_name: str | None = None
    """RuntimeClass, e.g. for a GPU or sandboxed runtime."""
    scheduler_name: str | None = None
    """A non-default scheduler, e.g. a gang scheduler."""
    priority_class_name: str | None = None
    """PriorityClass of the pods."""
    restart_policy: Literal["Never", "OnFailure"] = "Never"
    """Never: a failed pod fails (and counts against backoffLimit). OnFailure: its container restarts in place."""
    dns_policy: Literal["ClusterFirst", "ClusterFirstWithHostNet", "Default"] | None = None
    """Pod DNS policy. Default: Kubernetes' (ClusterFirst). (None is not offered: it needs a dnsConfig,
    and the brokers need the cluster's DNS to find each other.)"""
    image_pull_secrets: list[str] = Field(default_factory=list)
    """Existing Secrets of type kubernetes.io/dockerconfigjson for pulling private images (the admission
    check warns of one that is not there, or of another type, which the kubelet does not use)."""
    run_as_user: int | None = Field(default=None, ge=0)
    """User id every container of every pod runs as. Default: the image's user; with securityProfile
    restricted, 1000 (on OpenShift: an id in the namespace's range)."""
    run_as_group: int | None = Field(default=None, ge=0)
    """Primary group id of every container. Default: the image's; with securityProfile restricted, 1000."""
    fs_group: int | None = Field(default=None, ge=0)
    """Group that owns the pods' volumes (the state volume included), so that the user can write them.
    Default: none; with securityProfile restricted, runAsGroup."""

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        return rules.labels(value, reserved_prefix="app.kubernetes.io/")

    @field_validator("node_selector")
    @classmethod
    def _selector(cls, value: dict[str, str]) -> dict[str, str]:
        return rules.labels(value)

    @field_validator("annotations")
    @classmethod
    def _annotations(cls, value: dict[str, str]) -> dict[str, str]:
        return rules.annotation_keys(value)

    @field_validator("service_account_name", "runtime_class_name", "scheduler_name", "priority_class_name")
    @classmethod
    def _names(cls, value: str | None) -> str | None:
        return None if value is None else rules.subdomain(value)

    @field_validator("image_pull_secrets")
    @classmethod
    def _secret_names(cls, value: list[str]) -> list[str]:
        return [rules.subdomain(name) for name in value]

    @field_validator("affinity")
    @classmethod
    def _affinity(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else affinity.check(value)

    @model_validator(mode="after")
    def _one_anti_affinity(self) -> Pod:
        if self.one_pod_per_node and self.affinity and "podAntiAffinity" in self.affinity:
            raise ValueError("set pod.onePodPerNode or pod.affinity.podAntiAffinity, not both")
        return self
