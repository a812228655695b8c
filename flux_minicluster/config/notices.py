"""What a valid stack config may still do that its user did not mean: warnings the program gives at
each `pulumi up` and preview, never refusals (a cluster may be set up so that the config is right).
Pure; the admission check tells what the cluster itself says."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from flux_minicluster.config.project import NAMESPACE
from flux_minicluster.config.spec import MiniClusterSpec

PROVIDER_NAMESPACE = "kubernetes:namespace"
"""The Kubernetes provider's default namespace, for objects that name none."""
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
"""The Job label by which Kueue takes a Job into one of its queues."""


SHELL_REFERENCE = re.compile(r"\$(?:\{\w+\}|\w+)")
"""A variable as a shell refers to it ($PATH, ${HOME}), which Kubernetes leaves as it is."""


def config_warnings(raw: Mapping[str, Any], spec: MiniClusterSpec) -> list[str]:
    """Each warning for the stack config `raw`, as valid as `spec` says it is."""
    found = [
        _provider_namespace(raw, spec), _suspended_without_a_queue(spec), _flux_jobs_in_a_job(spec),
        *_shell_references(spec),
    ]  # fmt: skip
    return [said for said in found if said]


def _provider_namespace(raw: Mapping[str, Any], spec: MiniClusterSpec) -> str | None:
    """The Kubernetes provider's default namespace (kubernetes:namespace) is not the MiniCluster's when
    minicluster:namespace is unset: the provider puts there only objects that name no namespace, and
    every object of the MiniCluster names its own. (Following the provider's default instead would move
    a running cluster, Job and all, at an upgrade of this project.)"""
    default = raw.get(PROVIDER_NAMESPACE)
    if not default or f"{NAMESPACE}:namespace" in raw or default == spec.namespace:
        return None
    return (
        f"{PROVIDER_NAMESPACE} is {default!r}, but MiniCluster {spec.name!r} goes to namespace {spec.namespace!r} "
        f"({NAMESPACE}:namespace, unset, has that default): set {NAMESPACE}:namespace to {default!r} to put it there"
    )


def _suspended_without_a_queue(spec: MiniClusterSpec) -> str | None:
    """A suspended Job that names no Kueue queue runs only when something else resumes it (a Kueue that
    manages Jobs without a queue name, another queue, a user), and `pulumi up` waits for that, saying no
    more than that it waits for the Job to start, for up to jobTimeout (an hour by default)."""
    if not spec.suspend or KUEUE_QUEUE in spec.job_labels:
        return None
    return (
        f"{NAMESPACE}:suspend is true and {NAMESPACE}:jobLabels names no {KUEUE_QUEUE}: the Job runs only once "
        f"something resumes it (a queue that takes Jobs without that label, or `kubectl patch job {spec.name} "
        f'-n {spec.namespace} -p \'{{"spec":{{"suspend":false}}}}\'`), and `pulumi up` waits for that for up to '
        f"{NAMESPACE}:jobTimeout ({spec.job_timeout}s)"
    )


SUBMITTING = ("run", "submit", "batch", "alloc", "bulksubmit")
"""The `flux` subcommands that submit a job into the instance they run in."""


def _flux_jobs_in_a_job(spec: MiniClusterSpec) -> str | None:
    """`command: flux run ...` in a mode that submits the command itself: its job holds the nodes, and the
    job it submits waits for them. On real Flux, `flux run -N1 hostname` at two brokers (tasks as many)
    waited until jobTimeout, an hour by default, the log saying nothing after the quorum. (The flux-operator
    has the same rule: a command of flux commands wants its launcher.) A secret command is not looked at."""
    if spec.command is None or spec.mode not in ("submit", "interactive") or spec.is_secret("command"):
        return None
    words = spec.command_args
    if len(words) < 2 or words[0].rsplit("/", 1)[-1] != "flux" or words[1] not in SUBMITTING:
        return None
    return (
        f"{NAMESPACE}:command is `flux {words[1]} ...`, and mode {spec.mode!r} runs the command as a Flux job of "
        "its own, which holds the cluster's nodes: the job it submits waits for nodes that its own job holds, for "
        f"good where none is free (`pulumi up` then waits out {NAMESPACE}:jobTimeout, {spec.job_timeout}s). For a "
        f"command that runs Flux jobs itself, set {NAMESPACE}:mode to launcher: it is then the instance's program"
    )


def _shell_references(spec: MiniClusterSpec) -> list[str]:
    """Environment values that refer to a variable as a shell would: Kubernetes expands only `$(NAME)`, of
    a variable set before it in the pod spec, and takes `$NAME` as written. `PATH: /opt/app/bin:$PATH`
    so replaced the image's whole PATH, and on the real node the pods failed at their first `mkdir`. A
    secret environment's values are not looked at (a warning would show them)."""
    containers = [("environment", {} if spec.is_secret("environment") else spec.environment)]
    containers += [(f"containers[{i}].environment", sidecar.environment) for i, sidecar in enumerate(spec.containers)]
    found = []
    for key, environment in containers:
        for name, value in environment.items():
            references = SHELL_REFERENCE.findall(str(value))
            if not references:
                continue
            replaced = ": the image's PATH is replaced by this one" if name == "PATH" else ""
            found.append(
                f"{NAMESPACE}:{key}.{name} refers to {', '.join(references)} as a shell would, and Kubernetes takes "
                f"that as written (it expands only $(NAME), of a variable set before it in the pod spec){replaced}"
            )
    return found
