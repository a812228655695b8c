"""Who the pods' processes are, and what they may do: the pod and container securityContexts of every
pod the program creates (the broker pods and the keygen pod). With securityProfile restricted, they
satisfy Kubernetes' restricted Pod Security Standard; config/production.py refuses, by key, what the
user's own settings would break of it. Pure."""

from __future__ import annotations

from typing import Any

from flux_minicluster.config.spec import MiniClusterSpec

Manifest = dict[str, Any]
RESTRICTED_CAPABILITIES = {"drop": ["ALL"]}
"""Every capability dropped; a container's securityContext may add back NET_BIND_SERVICE only."""


def secure(spec: MiniClusterSpec, pod_spec: Manifest) -> Manifest:
    """`pod_spec` with its securityContexts: the pod's identity, and under restricted, every container's."""
    context: Manifest = dict(spec.identity)
    if "fsGroup" in context:  # a state volume with many files is not walked again at every start
        context["fsGroupChangePolicy"] = "OnRootMismatch"
    if spec.restricted:
        context.update(runAsNonRoot=True, seccompProfile={"type": "RuntimeDefault"})
        for container in [*pod_spec.get("initContainers", []), *pod_spec["containers"]]:
            container["securityContext"] = restricted_container(container.get("securityContext") or {})
    if context:
        pod_spec["securityContext"] = context
    return pod_spec


def restricted_container(given: Manifest) -> Manifest:
    """A container's securityContext under the restricted profile, over what the user gave."""
    capabilities = {
        **RESTRICTED_CAPABILITIES,
        **{k: v for k, v in (given.get("capabilities") or {}).items() if k == "add"},
    }
    return {**given, "allowPrivilegeEscalation": False, "capabilities": capabilities}
