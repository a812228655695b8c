"""The volumes of the config: the user's (minicluster:volumes) and rank 0's state volume. Pure pydantic."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, field_validator, model_validator
from pydantic.alias_generators import to_camel

from flux_minicluster.config import paths, rules
from flux_minicluster.config.settings import Model
from flux_minicluster.config.types import AbsolutePath, FluxDuration, MountPath, Subdomain


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

    path: MountPath
    """Mount path (absolute)."""
    read_only: bool = False
    """Mount it read-only."""
    claim_name: Subdomain | None = None
    """An existing PersistentVolumeClaim."""
    host_path: AbsolutePath | None = None
    """A directory on the node."""
    config_map: Subdomain | None = None
    """An existing ConfigMap."""
    secret: Subdomain | None = None
    """An existing Secret."""
    empty_dir: EmptyDir | None = None
    """An emptyDir: {} or {medium: Memory, sizeLimit: 1Gi}."""

    @model_validator(mode="after")
    def _one_source(self) -> Volume:
        given = [to_camel(source) for source in VOLUME_SOURCES if getattr(self, source) is not None]
        if len(given) != 1:
            choices = ", ".join(to_camel(source) for source in VOLUME_SOURCES)
            raise ValueError(
                f"needs exactly one source of {choices} (it has {len(given)}: {', '.join(given) or 'none'})"
            )
        return self


RESERVED_VOLUMES = set(paths.OWN_VOLUMES)
"""Volume names the MiniCluster's own volumes have."""


def _volume_names(value: dict[str, Volume]) -> dict[str, Volume]:
    for name in value:
        rules.label(name, rules.DNS_1123_LABEL, f"a DNS-1123 label ({name!r})")
        if name in RESERVED_VOLUMES:
            raise ValueError(f"{name!r} is a volume name the MiniCluster uses itself")
    mount_paths = [volume.path for volume in value.values()]
    if len(set(mount_paths)) != len(mount_paths):
        raise ValueError("two volumes share a mount path")
    return value


Volumes = Annotated[dict[str, Volume], AfterValidator(_volume_names)]
"""The user's volumes by name: each a DNS-1123 label none of the MiniCluster's own, each at a path of
its own."""


class StateVolume(Model):
    """Where rank 0 keeps the Flux instance's state (its statedir: content store, KVS, job manager
    checkpoint), so that a replaced rank 0 restarts the same instance. Exactly one source."""

    claim_name: Subdomain | None = None
    """An existing PersistentVolumeClaim. Every pod mounts it; only rank 0 uses it."""
    access_mode: Literal["ReadWriteMany", "ReadWriteOnce"] = "ReadWriteMany"
    """The claim's access mode. ReadWriteOnce mounts on one node only, so every pod must then be pinned
    to one node (pod.nodeSelector kubernetes.io/hostname)."""
    host_path: AbsolutePath | None = None
    """A directory on the node: only for a MiniCluster whose pods all run on one node."""
    checkpoint_period: FluxDuration = "30s"
    """How often the instance's state is checkpointed ([kvs] checkpoint-period): what a rank 0 that is
    killed, rather than stopped, can lose."""

    @model_validator(mode="after")
    def _one_source(self) -> StateVolume:
        if (self.claim_name is None) == (self.host_path is None):
            raise ValueError("needs exactly one of claimName and hostPath")
        return self
