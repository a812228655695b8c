"""Kubernetes' Pod Security Standards, restricted profile (which includes baseline), as the Kubernetes
documentation states its controls (concepts/security/pod-security-standards, policy version latest),
encoded here independently of the code under test: each control is a check on a pod spec.

`violations(pod_spec)` lists the controls a pod breaks, in the documentation's words.
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]

ALLOWED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected",
                   "secret"}  # fmt: skip
BASELINE_CAPABILITIES = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                         "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}  # fmt: skip
SELINUX_TYPES = {None, "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}  # fmt: skip


def containers(pod: Json) -> list[Json]:
    return [*pod.get("initContainers", []), *pod.get("containers", []), *pod.get("ephemeralContainers", [])]


def violations(pod: Json) -> list[str]:
    found = _baseline(pod) + _restricted(pod)
    return sorted(set(found))


def _baseline(pod: Json) -> list[str]:
    found = []
    if any(pod.get(field) for field in ("hostNetwork", "hostPID", "hostIPC")):
        found.append("Host Namespaces: hostNetwork, hostPID and hostIPC must be unset or false")
    pod_context = pod.get("securityContext") or {}
    for container in containers(pod):
        context = container.get("securityContext") or {}
        name = container["name"]
        if context.get("privileged"):
            found.append(f"Privileged Containers: {name} is privileged")
        added = set((context.get("capabilities") or {}).get("add") or [])
        if added - BASELINE_CAPABILITIES:
            found.append(f"Capabilities (baseline): {name} adds {sorted(added - BASELINE_CAPABILITIES)}")
        if any(port.get("hostPort") for port in container.get("ports") or []):
            found.append(f"Host Ports: {name} uses a hostPort")
        if context.get("procMount") not in (None, "Default"):
            found.append(f"/proc Mount Type: {name}")
        if (context.get("appArmorProfile") or {}).get("type") == "Unconfined":
            found.append(f"AppArmor: {name} is Unconfined")
        if (context.get("windowsOptions") or {}).get("hostProcess"):
            found.append(f"HostProcess: {name}")
        found += _selinux(context.get("seLinuxOptions"), name)
    if any(volume.get("hostPath") is not None for volume in pod.get("volumes") or []):
        found.append("HostPath Volumes: forbidden")
    if (pod_context.get("appArmorProfile") or {}).get("type") == "Unconfined":
        found.append("AppArmor: the pod is Unconfined")
    found += _selinux(pod_context.get("seLinuxOptions"), "the pod")
    if {sysctl["name"] for sysctl in pod_context.get("sysctls") or []} - SAFE_SYSCTLS:
        found.append("Sysctls: only the safe set")
    return found


def _selinux(options: Json | None, whose: str) -> list[str]:
    options = options or {}
    if options.get("type") not in SELINUX_TYPES or options.get("user") or options.get("role"):
        return [f"SELinux: {whose} sets a type outside the allowed ones, or a user or role"]
    return []


def _restricted(pod: Json) -> list[str]:
    found = []
    pod_context = pod.get("securityContext") or {}
    for volume in pod.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= ALLOWED_VOLUMES:
            found.append(f"Volume Types: {volume['name']} is {sorted(kinds)}")
    if pod_context.get("runAsUser") == 0:
        found.append("Running as Non-root user: the pod's runAsUser is 0")
    pod_seccomp = (pod_context.get("seccompProfile") or {}).get("type")
    for container in containers(pod):
        context = container.get("securityContext") or {}
        name = container["name"]
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"Privilege Escalation: {name} must set allowPrivilegeEscalation false")
        non_root = context.get("runAsNonRoot", pod_context.get("runAsNonRoot"))
        if non_root is not True:
            found.append(f"Running as Non-root: {name} (or the pod) must set runAsNonRoot true")
        if context.get("runAsUser") == 0:
            found.append(f"Running as Non-root user: {name}'s runAsUser is 0")
        seccomp = (context.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"Seccomp: {name} (or the pod) must use RuntimeDefault or Localhost")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            found.append(f"Capabilities: {name} must drop ALL")
        if set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
            found.append(f"Capabilities: {name} may add only NET_BIND_SERVICE")
    return found
