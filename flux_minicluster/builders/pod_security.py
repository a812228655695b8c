"""Who the pods' processes are, and what they may do: the pod and container securityContexts of every
pod the program creates (the broker pods and the keygen pod). With securityProfile restricted, they
satisfy Kubernetes' restricted Pod Security Standard; config/production.py refuses, by key, what the
user's own settings would break of it. Pure."""

from __future__ import annotations

from typing import Any

from flux_minicluster.config.spec import MiniClusterSpec

Manifest = dict[str, Any]
RESTRICTED_ID = 1000
"""The user and group of a restricted pod (securityProfile) where pod.runAsUser and runAsGroup are unset."""
RESTRICTED_CAPABILITIES = {"drop": ["ALL"]}
"""Every capability dropped; a container's securityContext may add back NET_BIND_SERVICE only."""


def secure(spec: MiniClusterSpec, pod_spec: Manifest) -> Manifest:
    """`pod_spec` with its securityContexts: the pod's identity, and under restricted, every container's."""
    context: Manifest = identity(spec)
    if "fsGroup" in context:  # a state volume with many files is not walked again at every start
        context["fsGroupChangePolicy"] = "OnRootMismatch"
    if spec.restricted:
        context.update(runAsNonRoot=True, seccompProfile={"type": "RuntimeDefault"})
        for container in [*pod_spec.get("initContainers", []), *pod_spec["containers"]]:
            container["securityContext"] = restricted_container(container.get("securityContext") or {})
    if context:
        pod_spec["securityContext"] = context
    return pod_spec


def identity(spec: MiniClusterSpec) -> dict[str, int]:
    """runAsUser, runAsGroup and fsGroup of every pod: as set, or as securityProfile restricted implies."""
    pod, implied = spec.pod, RESTRICTED_ID if spec.restricted else None
    user = pod.run_as_user if pod.run_as_user is not None else implied
    group = pod.run_as_group if pod.run_as_group is not None else implied
    fs_group = pod.fs_group if pod.fs_group is not None else (group if spec.restricted else None)
    found = {"runAsUser": user, "runAsGroup": group, "fsGroup": fs_group}
    return {key: value for key, value in found.items() if value is not None}


def restricted_container(given: Manifest) -> Manifest:
    """A container's securityContext under the restricted profile, over what the user gave."""
    capabilities = {
        **RESTRICTED_CAPABILITIES,
        **{k: v for k, v in (given.get("capabilities") or {}).items() if k == "add"},
    }
    return {**given, "allowPrivilegeEscalation": False, "capabilities": capabilities}
