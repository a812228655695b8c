"""The nested parts of the config: containers, volumes, pod and Flux extras. Pure pydantic models.

Names follow the flux-operator's MiniCluster where it has the same setting, so its users feel at
home. Every field's docstring feeds the README's configuration reference.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from components.config import paths, rules

DEFAULT_FLUX_VIEW_IMAGE = "ghcr.io/converged-computing/flux-view-rocky:tag-9"
FLUX_RESTFUL_API_REPOSITORY = "flux-framework/flux-restful-api"
ImagePullPolicy = Literal["Always", "IfNotPresent", "Never"]
EnvValue = str | int | float | bool


class Model(BaseModel):
    # Field docstrings become descriptions: the README's configuration reference is generated from them.
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True, use_attribute_docstrings=True
    )


class Hooks(Model):
    """Shell snippets run by every pod's entrypoint (bash) around the broker."""

    init: str | None = None
    """Runs first, before the rank is known or anything is set up."""
    pre: str | None = None
    """Runs after set-up, right before the broker starts."""
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
        return rules.quantities(value)


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
    """A Kubernetes container securityContext, as is (e.g. {privileged: true} for some fabrics)."""
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    """postStart and preStop shell commands."""

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

    name: str
    """Container name (DNS-1123 label), unique within the pod."""
    image: str
    """Its image."""
    command: list[str] | None = None
    """Its command (argv). Default: the image's entrypoint."""
    args: list[str] | None = None
    """Its arguments. Default: the image's."""
    volumes: list[str] = Field(default_factory=list)
    """Names of `minicluster:volumes` to mount here too, at the same paths."""
    run_flux: bool = False
    """Only the MiniCluster's own container (minicluster:image) runs Flux; kept for operator users."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return rules.label(value, rules.DNS_1123_LABEL, "a DNS-1123 label")

    @field_validator("image")
    @classmethod
    def _image(cls, value: str) -> str:
        return rules.image(value)

    @field_validator("run_flux")
    @classmethod
    def _one_flux_container(cls, value: bool) -> bool:
        if value:
            raise ValueError("only one container runs Flux, the one given by minicluster:image and minicluster:command")
        return value


class EmptyDir(Model):
    """Scratch space that lives as long as the pod."""

    medium: Literal["", "Memory"] = ""
    """Memory: a tmpfs (counts against the container's memory)."""
    size_limit: str | None = None
    """A quantity, e.g. 1Gi."""

    @field_validator("size_limit")
    @classmethod
    def _quantity(cls, value: str | None) -> str | None:
        return None if value is None else rules.quantities({"sizeLimit": value})["sizeLimit"]


VOLUME_SOURCES = ("claim_name", "host_path", "config_map", "secret", "empty_dir")


class Volume(Model):
    """A volume mounted into the Flux container (and the sidecars that name it). Exactly one source."""

    path: str
    """Mount path (absolute)."""
    read_only: bool = False
    """Mount it read-only."""
    claim_name: str | None = None
    """An existing PersistentVolumeClaim."""
    host_path: str | None = None
    """A directory on the node."""
    config_map: str | None = None
    """An existing ConfigMap."""
    secret: str | None = None
    """An existing Secret."""
    empty_dir: EmptyDir | None = None
    """An emptyDir: {} or {medium: Memory, sizeLimit: 1Gi}."""

    @field_validator("path", "host_path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        return None if value is None else rules.absolute_path(value)

    @field_validator("path")
    @classmethod
    def _not_ours(cls, value: str) -> str:
        return rules.clear_of(value, paths.RESERVED)

    @field_validator("claim_name", "config_map", "secret")
    @classmethod
    def _object_name(cls, value: str | None) -> str | None:
        return None if value is None else rules.subdomain(value)

    @model_validator(mode="after")
    def _one_source(self) -> Volume:
        given = [to_camel(source) for source in VOLUME_SOURCES if getattr(self, source) is not None]
        if len(given) != 1:
            choices = ", ".join(to_camel(source) for source in VOLUME_SOURCES)
            raise ValueError(
                f"needs exactly one source of {choices} (it has {len(given)}: {', '.join(given) or 'none'})"
            )
        return self


class StateVolume(Model):
    """Where rank 0 keeps the Flux instance's state (its statedir: content store, KVS, job manager
    checkpoint), so that a replaced rank 0 restarts the same instance. Exactly one source."""

    claim_name: str | None = None
    """An existing PersistentVolumeClaim. Every pod mounts it; only rank 0 uses it."""
    access_mode: Literal["ReadWriteMany", "ReadWriteOnce"] = "ReadWriteMany"
    """The claim's access mode. ReadWriteOnce mounts on one node only, so every pod must then be pinned
    to one node (pod.nodeSelector kubernetes.io/hostname)."""
    host_path: str | None = None
    """A directory on the node: only for a MiniCluster whose pods all run on one node."""
    checkpoint_period: str = "30s"
    """How often the instance's state is checkpointed ([kvs] checkpoint-period): what a rank 0 that is
    killed, rather than stopped, can lose."""

    @field_validator("claim_name")
    @classmethod
    def _claim(cls, value: str | None) -> str | None:
        return None if value is None else rules.subdomain(value)

    @field_validator("host_path")
    @classmethod
    def _directory(cls, value: str | None) -> str | None:
        return None if value is None else rules.absolute_path(value)

    @field_validator("checkpoint_period")
    @classmethod
    def _period(cls, value: str) -> str:
        return rules.flux_duration(value)

    @model_validator(mode="after")
    def _one_source(self) -> StateVolume:
        if (self.claim_name is None) == (self.host_path is None):
            raise ValueError("needs exactly one of claimName and hostPath")
        return self


class Pod(Model):
    """Settings of every broker pod (names follow the flux-operator's `pod`)."""

    labels: dict[str, str] = Field(default_factory=dict)
    """Extra pod labels (app.kubernetes.io/* are the MiniCluster's own)."""
    annotations: dict[str, str] = Field(default_factory=dict)
    """Pod annotations."""
    node_selector: dict[str, str] = Field(default_factory=dict)
    """Schedule only on nodes with these labels."""
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    """Kubernetes tolerations, as is."""
    affinity: dict[str, Any] | None = None
    """A Kubernetes affinity, as is."""
    one_pod_per_node: bool = False
    """Never put two brokers on one node (a required pod anti-affinity on the hostname)."""
    service_account_name: str | None = None
    """Service account the pods run as."""
    automount_service_account_token: bool | None = None
    """Mount the service account's API token (Kubernetes' default: true)."""
    runtime_class_name: str | None = None
    """RuntimeClass, e.g. for a GPU or sandboxed runtime."""
    scheduler_name: str | None = None
    """A non-default scheduler, e.g. a gang scheduler."""
    priority_class_name: str | None = None
    """PriorityClass of the pods."""
    restart_policy: Literal["Never", "OnFailure"] = "Never"
    """Never: a failed pod fails (and counts against backoffLimit). OnFailure: its container restarts in place."""
    dns_policy: Literal["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"] | None = None
    """Pod DNS policy. Default: Kubernetes' (ClusterFirst)."""
    image_pull_secrets: list[str] = Field(default_factory=list)
    """Existing Secrets for pulling private images."""

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

    @model_validator(mode="after")
    def _one_anti_affinity(self) -> Pod:
        if self.one_pod_per_node and self.affinity and "podAntiAffinity" in self.affinity:
            raise ValueError("set pod.onePodPerNode or pod.affinity.podAntiAffinity, not both")
        return self


class FluxView(Model):
    """Flux without Flux in the application image: an init container copies a Flux install (a spack
    view, as the flux-operator's flux-view images hold it) into the pod, and the entrypoint uses it."""

    enabled: bool = False
    """Use the view (the application image then needs no Flux, only bash)."""
    image: str = DEFAULT_FLUX_VIEW_IMAGE
    """The view image: match the application image's OS (rocky 8/9, ubuntu focal/jammy/noble, arm)."""
    path: str = "/mnt/flux"
    """Where the view is mounted in the pods."""

    @field_validator("image")
    @classmethod
    def _image(cls, value: str) -> str:
        return rules.image(value)

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return rules.clear_of(rules.absolute_path(value), paths.RESERVED)


class RestfulApi(Model):
    """The Flux RESTful API server on rank 0 of a persistent cluster, behind a Service."""

    enabled: bool = False
    """Start the server (needs a persistent cluster: no minicluster:command)."""
    port: int = Field(default=5000, ge=1, le=65535)
    """Its port, on the pod and on the Service <name>-api."""
    secret_name: str | None = None
    """Existing Secret with keys `user`, `token` and `secret-key` (required when enabled)."""
    install_dir: str = "/code"
    """Where the image has the server's code (its init container copies it); otherwise it is cloned."""
    repository: str = FLUX_RESTFUL_API_REPOSITORY
    """GitHub repository to install from."""
    branch: str = "main"
    """Branch to install."""

    @field_validator("install_dir")
    @classmethod
    def _dir(cls, value: str) -> str:
        return rules.absolute_path(value)

    @field_validator("repository")
    @classmethod
    def _repository(cls, value: str) -> str:
        if not re.match(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", value):
            raise ValueError("must be OWNER/NAME")
        return value

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: str) -> str:
        if not re.match(r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$", value):
            raise ValueError("must be a git branch name")
        return value

    @model_validator(mode="after")
    def _credentials(self) -> RestfulApi:
        if self.enabled and not self.secret_name:
            raise ValueError("restfulApi.secretName is required when enabled: the API never runs open")
        if self.secret_name is not None:
            rules.subdomain(self.secret_name)
        return self
