"""The rules across keys for production clusters: GPUs, the restricted Pod Security profile, gang
scheduling, autoscaling. Each yields a Problem (key, message); consistency.problems checks them with the
rest once every key is valid on its own. Pure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flux_minicluster.config import rules
from flux_minicluster.config.problem import Problem
from flux_minicluster.config.rules import gpu_names
from flux_minicluster.config.spec import MiniClusterSpec

Found = Iterator[Problem]


def problems(spec: MiniClusterSpec) -> Found:
    yield from _gpus(spec)
    if spec.restricted:
        yield from _restricted(spec)
    yield from _gang(spec)
    if spec.autoscale.enabled:
        yield from _autoscale(spec)
    elif spec.autoscale.admission_policy:
        yield Problem(
            "autoscale.admissionPolicy",
            "minicluster:autoscale.admissionPolicy bounds the autoscaler's account: it needs "
            "minicluster:autoscale.enabled",
        )


def _autoscale(spec: MiniClusterSpec) -> Found:
    """The autoscaler resizes in place, within bounds that leave it room, as its own service account."""
    if not spec.elastic:
        yield Problem(
            "autoscale.enabled",
            f"minicluster:autoscale resizes a running instance, and mode {spec.mode!r} with a command runs once at "
            "its size: use no command, or mode interactive or launcher",
        )
    elif spec.largest_size <= spec.smallest_size:
        yield Problem(
            "maxSize",
            f"minicluster:autoscale needs room: minicluster:maxSize ({spec.largest_size}) must be above "
            f"minicluster:minSize ({spec.smallest_size})",
        )
    if spec.scheduler is not None:
        yield Problem(
            "autoscale.enabled",
            "minicluster:autoscale with minicluster:scheduler: the gang's PodGroup holds the size, which the "
            "autoscaler may not change; resize with `pulumi up` instead",
        )
    if spec.pod.automount_service_account_token and spec.pod.service_account_name is None:
        yield Problem(
            "pod.automountServiceAccountToken",
            "minicluster:autoscale keeps its account's token in its own container: a token in the Flux container "
            "would let every Flux job resize or suspend the cluster; unset "
            "minicluster:pod.automountServiceAccountToken, or name an account of your own in "
            "minicluster:pod.serviceAccountName",
        )


def _gang(spec: MiniClusterSpec) -> Found:
    scheduler = spec.scheduler
    if scheduler is None:
        return
    if spec.pod.scheduler_name is not None:
        yield Problem(
            "pod.schedulerName",
            "minicluster:pod.schedulerName and minicluster:scheduler both name the scheduler: with a gang "
            "scheduler, set minicluster:scheduler.name only",
        )
    if scheduler.queue is not None and scheduler.gang != "volcano":
        yield Problem("scheduler.queue", "minicluster:scheduler.queue is a Volcano queue: for scheduler.gang volcano")


RESTRICTED = "minicluster:securityProfile is restricted"
ALLOWED_CAPABILITY = "NET_BIND_SERVICE"
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}


def refused_setting(field: str, value: Any) -> str | None:
    """What a container's securityContext field asks for that the restricted Pod Security Standard (with
    the baseline one it includes) forbids, or None."""
    given = value if isinstance(value, dict) else {}
    refusals = {
        "privileged": (value is True, "a privileged container"),
        "allowPrivilegeEscalation": (value is True, "privilege escalation"),
        "runAsNonRoot": (value is False, "a container that may run as root"),
        "runAsUser": (value == 0, "running as root (user 0)"),
        "procMount": (value not in (None, "Default"), "a procMount other than Default"),
        "seccompProfile": (
            given.get("type") not in (None, "RuntimeDefault", "Localhost"),
            "a seccomp profile other than RuntimeDefault or Localhost",
        ),
        "appArmorProfile": (given.get("type") == "Unconfined", "an Unconfined AppArmor profile"),
        "windowsOptions": (bool(given.get("hostProcess")), "a Windows host process"),
        "seLinuxOptions": (
            given.get("type", "") not in SELINUX_TYPES or bool({"user", "role"} & given.keys()),
            "an SELinux type, user or role of its own",
        ),
        "capabilities": (
            bool(set(given.get("add") or []) - {ALLOWED_CAPABILITY}),
            f"adding a capability other than {ALLOWED_CAPABILITY}",
        ),
    }
    refused, what = refusals.get(field, (False, ""))
    return what if refused else None


def _restricted(spec: MiniClusterSpec) -> Found:
    """What the user set that the restricted profile forbids (the pods are built to satisfy the rest)."""
    if spec.pod.run_as_user == 0:
        yield Problem("pod.runAsUser", f"minicluster:pod.runAsUser is 0 (root), and {RESTRICTED}: use a non-zero id")
    for name, volume in spec.volumes.items():
        if volume.host_path is not None:
            key = f"volumes.{name}.hostPath"
            yield Problem(key, f"minicluster:{key}: {RESTRICTED}, which allows no hostPath volume: use a claim")
    if spec.state_volume is not None and spec.state_volume.host_path is not None:
        yield Problem(
            "stateVolume.hostPath",
            f"minicluster:stateVolume.hostPath: {RESTRICTED}, which allows no hostPath volume: use claimName",
        )
    contexts = [("securityContext", spec.security_context)]
    contexts += [(f"containers[{i}].securityContext", c.security_context) for i, c in enumerate(spec.containers)]
    for key, context in contexts:
        for field, value in (context or {}).items():
            what = refused_setting(field, value)
            if what:
                yield Problem(f"{key}.{field}", f"minicluster:{key}.{field} asks for {what}, and {RESTRICTED}")


def _gpus(spec: MiniClusterSpec) -> Found:
    limits = spec.resources.limits
    named = gpu_names(limits)
    if spec.gpu_resource is None and len(named) > 1:
        yield Problem(
            "gpuResource",
            f"minicluster:resources.limits names {len(named)} GPU resources ({', '.join(named)}): set "
            "minicluster:gpuResource to the one Flux schedules",
        )
    given = limits.get(spec.gpu_resource_name)
    if spec.gpus is not None and given is not None and rules.quantity(given) != spec.gpus:
        yield Problem(
            "gpus",
            f"minicluster:gpus ({spec.gpus}) differs from minicluster:resources.limits.{spec.gpu_resource_name} "
            f"({given}): set one of them",
        )
    for index, sidecar in enumerate(spec.containers):
        asked = {**sidecar.resources.requests, **sidecar.resources.limits}
        found = sorted({*gpu_names(asked), *({spec.gpu_resource_name} & asked.keys())})
        if found:
            key = f"containers[{index}].resources"
            yield Problem(
                key,
                f"minicluster:{key} asks for {', '.join(found)}: only the Flux container's GPUs are in Flux's "
                "resource set, so Flux could not schedule these; give them to the Flux container (minicluster:gpus)",
            )
    yield from _gpus_per_task(spec)


def _gpus_per_task(spec: MiniClusterSpec) -> Found:
    per_task = spec.gpus_per_task
    if per_task is None:
        return
    if spec.command is None or spec.mode == "launcher":
        yield Problem(
            "gpusPerTask",
            "minicluster:gpusPerTask goes to the `flux submit` of minicluster:command (modes submit, batch, "
            "interactive); with no command or in mode launcher, pass -g in your own flux commands",
        )
    elif spec.broker_gpus == 0:
        yield Problem("gpusPerTask", "minicluster:gpusPerTask needs GPUs: set minicluster:gpus (GPUs per broker)")
    elif per_task * spec.tasks > spec.broker_gpus * spec.size:
        yield Problem(
            "gpusPerTask",
            f"minicluster:gpusPerTask ({per_task}) times minicluster:tasks ({spec.tasks}) is "
            f"{per_task * spec.tasks} GPUs, and the cluster has {spec.broker_gpus * spec.size} "
            f"({spec.broker_gpus} per broker, minicluster:gpus, times minicluster:size {spec.size}): Flux "
            "could never start the command",
        )
    elif per_task > spec.broker_gpus:
        yield Problem(
            "gpusPerTask",
            f"minicluster:gpusPerTask ({per_task}) is more than one broker has (minicluster:gpus "
            f"{spec.broker_gpus}): a task runs on one node, so Flux could never start it",
        )
