"""The objects the pods name and the MiniCluster does not make: each volume's Secret, ConfigMap or
PersistentVolumeClaim (minicluster:volumes, minicluster:stateVolume). A dry run does not look for
them; the kubelet does, when it mounts them. A pod whose Secret or ConfigMap is missing waits in
ContainerCreating, and `pulumi up` only ends at jobTimeout (an hour by default), where
pulumi-kubernetes says no more than that its containers are not ready (the real node). A missing
claim leaves the pods unschedulable. So the admission check reads each one (a GET, beside the dry
runs) before anything is created.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flux_minicluster.cluster import api_calls, kube
from flux_minicluster.config.spec import MiniClusterSpec

PLURALS = {"Secret": "secrets", "ConfigMap": "configmaps", "PersistentVolumeClaim": "persistentvolumeclaims"}


@dataclass(frozen=True)
class Reference:
    """An object of the namespace that a pod names, and the config key that names it."""

    kind: str
    name: str
    key: str

    def path(self, namespace: str) -> str:
        return api_calls.path("v1", PLURALS[self.kind], namespace, self.name)

    def missing(self, namespace: str) -> str:
        return f"the {self.kind} {self.name!r} that {self.key} names does not exist in namespace {namespace!r}"

    def unread(self, namespace: str, error: Exception) -> str:
        """Why it could not be looked for (no right to read it, say): a warning, not a refusal."""
        doing = f"looking for the {self.kind} {self.name!r} that {self.key} names"
        return f"not checked: {kube.describe(kube.problem(error), doing=doing, namespace=namespace, needs='get')}"


def references(spec: MiniClusterSpec) -> list[Reference]:
    """Every object a volume of the pods names, in the order of the config."""
    found = []
    for name, volume in spec.volumes.items():
        for kind, source, field in (("Secret", volume.secret, "secret"), ("ConfigMap", volume.config_map, "configMap"),
                                    ("PersistentVolumeClaim", volume.claim_name, "claimName")):  # fmt: skip
            if source is not None:
                found.append(Reference(kind, source, f"minicluster:volumes.{name}.{field}"))
    if spec.state_volume is not None and spec.state_volume.claim_name is not None:
        found.append(
            Reference("PersistentVolumeClaim", spec.state_volume.claim_name, "minicluster:stateVolume.claimName")
        )
    return found


def judged(namespace: str, reference: Reference, answer: Any) -> tuple[str, str]:
    """(a problem, a warning) from the look for `reference`: its object, None (404), or the error."""
    if isinstance(answer, Exception):
        return "", reference.unread(namespace, answer)
    return (reference.missing(namespace), "") if answer is None else ("", "")
