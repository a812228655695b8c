"""The objects the pods name and the MiniCluster does not make: each volume's Secret, ConfigMap or
PersistentVolumeClaim (minicluster:volumes, minicluster:stateVolume), each Secret key a container's
environment reads (environmentFromSecrets, a sidecar's too, restfulApi.secretName), and each pull
Secret (pod.imagePullSecrets: a warning, as the kubelet pulls without one it cannot find or use). A
dry run does not look for them; the kubelet does, when it mounts them or starts the container. A pod
whose Secret or ConfigMap volume is missing waits in ContainerCreating, and `pulumi up` only ends at
jobTimeout (an hour by default), where pulumi-kubernetes says no more than that its containers are
not ready (the real node); a Secret key that is missing holds the container in
CreateContainerConfigError; a missing claim leaves the pods unschedulable. So the admission check
reads each object once (a GET, beside the dry runs) before anything is created. Of a Secret it
reads only its type and which keys it has; of a claim, its access modes: one that mounts on one node
(or in one pod) only, which every broker pod mounts, is a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from flux_minicluster.builders.restful_api import KEYS as RESTFUL_API_KEYS
from flux_minicluster.cluster import api_calls, kube
from flux_minicluster.config import consistency
from flux_minicluster.config.consistency import PIN
from flux_minicluster.config.settings import SecretKey
from flux_minicluster.config.spec import MiniClusterSpec

PULL_SECRET_TYPES = ("kubernetes.io/dockerconfigjson", "kubernetes.io/dockercfg")
"""The Secret types the kubelet pulls with (Kubernetes 1.37's credentialprovider/secrets)."""
PLURALS = {"Secret": "secrets", "ConfigMap": "configmaps", "PersistentVolumeClaim": "persistentvolumeclaims"}
ADMISSION_LOOKUPS = (
    ("PriorityClass", re.compile(r"no PriorityClass with name (\S+) was found"), "minicluster:pod.priorityClassName"),
    ("RuntimeClass", re.compile(r'RuntimeClass "([^"]+)" not found'), "minicluster:pod.runtimeClassName"),
    ("ServiceAccount", re.compile(r'serviceaccount "([^"]+)" not found'), "minicluster:pod.serviceAccountName"),
)
"""What the API server's admission plugins (Priority, RuntimeClass, ServiceAccount) say when they refuse
a pod for an object it names that is not there, and the key that names it. The Job controller would
meet the same refusal for every pod (FailedCreate), which the scheduling guard stops only after
scheduleTimeout. The dry run of a sample pod gets it at once, with no right to read those objects
(a PriorityClass is the cluster's)."""


@dataclass(frozen=True)
class Sharing:
    """A claim that every broker pod mounts: `pods` of them at most (maxSize), pinned to one node or not."""

    pods: int
    one_node: bool
    read_only: bool

    def doubt(self, named: str, found: Any) -> str:
        """A claim of one node's (ReadWriteOnce) or one pod's (ReadWriteOncePod) that the pods cannot all
        use: the scheduler places only one pod with a ReadWriteOncePod claim, and a ReadWriteOnce volume
        attaches to one node, so a pod placed on another waits (a Multi-Attach error), or the volume's own
        node affinity holds them all to its node. Its access modes as bound, else as asked for."""
        modes = set((found.status.access_modes if found.status else None) or found.spec.access_modes or [])
        if self.pods == 1 or "ReadWriteMany" in modes or (self.read_only and "ReadOnlyMany" in modes):
            return ""
        every = f"and every broker pod ({self.pods}) mounts it"
        if "ReadWriteOncePod" in modes:
            return f"{named} is ReadWriteOncePod: one pod alone may use it, {every}; use a ReadWriteMany claim"
        if "ReadWriteOnce" not in modes or self.one_node:
            return ""
        return (
            f"{named} is ReadWriteOnce: it mounts on one node only, {every}, so they run on that node alone (one "
            f"placed on another waits with a Multi-Attach error); use a ReadWriteMany claim, or {PIN}"
        )


@dataclass(frozen=True)
class Reference:
    """An object of the namespace that a pod names, the config key that names it, and the key of its
    data that a container reads (None: the whole object, a volume)."""

    kind: str
    name: str
    key: str
    data_key: str | None = None
    needed: bool = True
    """False where the pods start without it: a pull Secret (the kubelet pulls without it, and only an
    image that needs it fails), so that one not there is a warning."""
    types: tuple[str, ...] = ()
    """The types of Secret the pods can use it as; () for any. The kubelet pulls only with a Secret of a
    registry's type (PULL_SECRET_TYPES), and passes over any other without a word: a generic Secret that
    holds a .dockerconfigjson is the usual slip."""
    shared: Sharing | None = None
    """A claim: how the pods share it."""

    def path(self, namespace: str) -> str:
        return api_calls.path("v1", PLURALS[self.kind], namespace, self.name)

    def problem(self, namespace: str, found: Any) -> str:
        """What is wrong with it, as `found` (a View, None if not there) shows; "" if nothing."""
        if found is None:
            said = _not_there(self.kind, self.name, self.key, f"in namespace {namespace!r}")
            return said if self.needed else f"{said}: the kubelet pulls without it, and an image that needs it fails"
        if self.data_key is not None and self.data_key not in (found.data or {}):
            return f"the {self.kind} {self.name!r} that {self.key} names has no key {self.data_key!r}"
        if self.types and found.type not in self.types:
            return (
                f"the {self.kind} {self.name!r} that {self.key} names is of type {found.type!r}, and the kubelet "
                f"pulls only with one of type {' or '.join(self.types)} (`kubectl create secret docker-registry` "
                "makes one): it pulls without it, and an image that needs it fails"
            )
        return ""

    def doubt(self, found: Any) -> str:
        """What may keep some pods from starting with it, as `found` (a View) shows; "" if nothing."""
        return (
            ""
            if self.shared is None
            else self.shared.doubt(f"the {self.kind} {self.name!r} that {self.key} names", found)
        )

    def unread(self, namespace: str, error: Exception) -> str:
        """Why it could not be looked for (no right to read it, say): a warning, not a refusal."""
        doing = f"looking for the {self.kind} {self.name!r} that {self.key} names"
        return f"not checked: {kube.describe(kube.problem(error), doing=doing, namespace=namespace, needs='get')}"


def references(spec: MiniClusterSpec) -> list[Reference]:
    """Every object a pod names, in the order of the config."""
    found = []
    for name, volume in spec.volumes.items():
        for kind, source, field in (("Secret", volume.secret, "secret"), ("ConfigMap", volume.config_map, "configMap"),
                                    ("PersistentVolumeClaim", volume.claim_name, "claimName")):  # fmt: skip
            if source is not None:
                shared = sharing(spec, volume.read_only) if kind == "PersistentVolumeClaim" else None
                found.append(Reference(kind, source, f"minicluster:volumes.{name}.{field}", shared=shared))
    state = spec.state_volume
    if state is not None and state.claim_name is not None:
        key = "minicluster:stateVolume.claimName"
        found.append(Reference("PersistentVolumeClaim", state.claim_name, key, shared=sharing(spec, False)))
    found += _secret_keys("minicluster:environmentFromSecrets", spec.environment_from_secrets)
    found += [Reference("Secret", name, "minicluster:pod.imagePullSecrets", needed=False, types=PULL_SECRET_TYPES)
              for name in spec.pod.image_pull_secrets]  # fmt: skip
    for index, sidecar in enumerate(spec.containers):
        found += _secret_keys(
            f"minicluster:containers[{index}].environmentFromSecrets", sidecar.environment_from_secrets
        )
    api = spec.restful_api
    if api.enabled and api.secret_name is not None:
        found += [Reference("Secret", api.secret_name, "minicluster:restfulApi.secretName", key)
                  for key in RESTFUL_API_KEYS.values()]  # fmt: skip
    return found


def sharing(spec: MiniClusterSpec, read_only: bool) -> Sharing:
    return Sharing(spec.largest_size, consistency.pinned_to_one_node(spec), read_only)


def _secret_keys(key: str, variables: dict[str, SecretKey]) -> list[Reference]:
    return [Reference("Secret", ref.name, f"{key}.{variable}.name", ref.key) for variable, ref in variables.items()]


def judged(namespace: str, named: list[Reference], answers: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the problems, the warnings) of `named`, from the answers to the looks at their paths: the object,
    None (404), or the error; each said once."""
    problems: dict[str, None] = {}
    warnings: dict[str, None] = {}
    for reference in named:
        answer = answers[reference.path(namespace)]
        if isinstance(answer, Exception):
            warnings[reference.unread(namespace, answer)] = None
        elif problem := reference.problem(namespace, answer):
            (problems if reference.needed else warnings)[problem] = None
        elif answer is not None and (doubt := reference.doubt(answer)):
            warnings[doubt] = None
    return list(problems), list(warnings)


def refused_pod_names(spec: MiniClusterSpec, detail: str) -> str:
    """The object a sample pod names that is not there, as the API server's admission refused the pod
    for it (`detail`, its message), said as `problem` says a missing one; "" if that is not why. Only
    the service account the config names: another one is the MiniCluster's own (the autoscaler's, the
    keeper's), made with it."""
    for kind, said, key in ADMISSION_LOOKUPS:
        named = said.search(detail)
        if named is None or (kind == "ServiceAccount" and named[1] != spec.pod.service_account_name):
            continue
        where = f"in namespace {spec.namespace!r}" if kind == "ServiceAccount" else "in the cluster"
        return _not_there(kind, named[1], key, where)
    return ""


def _not_there(kind: str, name: str, key: str, where: str) -> str:
    """One wording for an object a pod names that does not exist, whoever found it missing."""
    return f"the {kind} {name!r} that {key} names does not exist {where}"
