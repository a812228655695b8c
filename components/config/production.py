"""The rules across keys for production clusters: GPUs, the restricted Pod Security profile, gang
scheduling. Each yields consistency.Problem (key, message); consistency.problems checks them with the
rest once every key is valid on its own. Pure."""

from __future__ import annotations

from collections.abc import Iterator

from components.config import rules
from components.config.consistency import Problem
from components.config.spec import MiniClusterSpec, gpu_names

Found = Iterator[Problem]


def problems(spec: MiniClusterSpec) -> Found:
    yield from _gpus(spec)


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
