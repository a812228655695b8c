"""The rules across config keys: each returns structured problems (the key, and a message that names
every key it involves), checked by the loader once every key is valid on its own. Pure."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterator

from flux_minicluster.config import paths, production, rules
from flux_minicluster.config.problem import Problem
from flux_minicluster.config.rules import DNS_LABEL_MAX, DNS_NAME_MAX
from flux_minicluster.config.spec import RESERVED_CONTAINERS, MiniClusterSpec

PIN = "pin every pod to one node (minicluster:pod.nodeSelector kubernetes.io/hostname)"
"""What lets a volume that mounts on one node only serve every pod."""


def pinned_to_one_node(spec: MiniClusterSpec) -> bool:
    return "kubernetes.io/hostname" in spec.pod.node_selector


def problems(spec: MiniClusterSpec) -> list[Problem]:
    return [problem for rule in RULES for problem in rule(spec)]


def _sizes(spec: MiniClusterSpec) -> Iterator[Problem]:
    if spec.max_size is not None and spec.max_size < spec.size:
        yield Problem(
            "size",
            f"minicluster:size ({spec.size}) is above minicluster:maxSize ({spec.max_size}), the most hosts the "
            f"instance has: raise minicluster:maxSize to at least {spec.size} too (that changes the hostlist, so "
            "the Job and its Flux instance are replaced)",
        )
    if spec.min_size is not None and spec.max_size is not None and spec.min_size > spec.max_size:
        yield Problem(
            "minSize",
            f"minicluster:minSize ({spec.min_size}) is above minicluster:maxSize ({spec.max_size}): the size "
            "can never be between them",
        )
    elif spec.min_size is not None and spec.min_size > spec.size:
        yield Problem(
            "size",
            f"minicluster:size ({spec.size}) is below minicluster:minSize ({spec.min_size}): lower "
            "minicluster:minSize to shrink further (the cluster is not replaced for that)",
        )


def _elastic_only(spec: MiniClusterSpec) -> Iterator[Problem]:
    """A one-shot command runs once at one size: a new size is a new run (a new Job), not a resize."""
    if not spec.elastic and spec.max_size is not None and spec.max_size != spec.size:
        yield Problem(
            "maxSize",
            f"minicluster:maxSize ({spec.max_size}) is for elastic clusters (no command, or mode interactive or "
            f"launcher), and mode {spec.mode!r} with a command runs once: a new size starts a new run. "
            "Unset minicluster:maxSize",
        )


def _names(spec: MiniClusterSpec) -> Iterator[Problem]:
    last_host = spec.host(spec.largest_size - 1)
    pod_fqdn = f"{last_host}.{spec.service}.{spec.namespace}.svc.{spec.cluster_domain}"
    if len(last_host) > DNS_LABEL_MAX:
        yield Problem(
            "name",
            f"minicluster:name: the last pod hostname {last_host!r} is {len(last_host)} characters; "
            f"hostnames are DNS labels of at most {DNS_LABEL_MAX} (shorten the name or maxSize)",
        )
    if len(pod_fqdn) > DNS_NAME_MAX:
        yield Problem(
            "name", f"minicluster:name: the pod DNS name {pod_fqdn!r} is longer than {DNS_NAME_MAX} characters"
        )
    if spec.restful_api.enabled and len(spec.api_service) > DNS_LABEL_MAX:
        yield Problem(
            "name", f"minicluster:name: the API Service name {spec.api_service!r} is over {DNS_LABEL_MAX} characters"
        )


def _modes(spec: MiniClusterSpec) -> Iterator[Problem]:
    if spec.mode in ("launcher", "batch") and spec.command is None:
        yield Problem("mode", f"minicluster:mode {spec.mode!r} needs minicluster:command")
    if spec.batch_output is not None and spec.mode != "batch":
        yield Problem("batchOutput", f"minicluster:batchOutput is for mode 'batch', not {spec.mode!r}")
    if spec.restful_api.enabled and spec.command is not None:
        yield Problem(
            "restfulApi",
            "minicluster:restfulApi runs as rank 0's program in a persistent cluster: "
            "unset minicluster:command or disable the API",
        )


def _command_words(spec: MiniClusterSpec) -> Iterator[Problem]:
    """Outside batch mode the command's words go to Flux as they are, and no shell runs them: an
    operator or an expansion would reach the command as text (`hostname && sleep 5` runs `hostname`
    with three arguments, `echo $HOME` prints `$HOME`), and lines would be one command (`echo one` and
    `echo two` in a YAML block ran `echo one echo two`)."""
    if spec.command is None or spec.mode == "batch":
        return
    found = rules.shell_syntax(spec.command)
    if found == "\n":  # a YAML block of commands, say
        yield Problem(
            "command",
            f"minicluster:command is several lines, but no shell runs the command in mode {spec.mode!r}: their "
            "words would go to Flux as one command. Give the lines to a shell (sh -c '...'), make each a job of "
            "its own (mode 'batch'), or end each line but the last with a backslash if they are one command",
        )
    elif found:
        yield Problem(
            "command",
            f"minicluster:command: {found!r} is shell syntax, but no shell runs the command in mode "
            f"{spec.mode!r}: its words go to Flux as they are. Give the line to a shell: sh -c '...'",
        )


def _certificate(spec: MiniClusterSpec) -> Iterator[Problem]:
    if spec.curve_certificate is not None and spec.keygen == "local":
        yield Problem(
            "keygen", "minicluster:curveCertificate is set, so minicluster:keygen 'local' has nothing to do; unset one"
        )


def _containers(spec: MiniClusterSpec) -> Iterator[Problem]:
    names = [sidecar.name for sidecar in spec.containers]
    for name in sorted({name for name in names if names.count(name) > 1}):
        yield Problem("containers", f"minicluster:containers: two containers are named {name!r}")
    for name in names:
        if name in RESERVED_CONTAINERS:
            yield Problem(
                "containers", f"minicluster:containers: {name!r} is the name of a container the MiniCluster adds itself"
            )
    for index, sidecar in enumerate(spec.containers):
        for volume in sidecar.volumes:
            if volume not in spec.volumes:
                key = f"containers[{index}].volumes"
                yield Problem(key, f"minicluster:{key}: {volume!r} is not one of minicluster:volumes")


def _ports_and_paths(spec: MiniClusterSpec) -> Iterator[Problem]:
    api = spec.restful_api
    if api.enabled and api.port == spec.port:
        yield Problem(
            "restfulApi.port", f"minicluster:restfulApi.port {api.port} is the Flux overlay port (minicluster:port)"
        )
    metrics = spec.metrics
    taken = {spec.port: "the Flux overlay port (minicluster:port)"} | (
        {api.port: "minicluster:restfulApi.port"} if api.enabled else {}
    )
    if metrics.enabled and metrics.port in taken:
        yield Problem("metrics.port", f"minicluster:metrics.port {metrics.port} is {taken[metrics.port]}")
    if spec.flux_view.enabled and spec.flux_view.path in {volume.path for volume in spec.volumes.values()}:
        yield Problem("fluxView.path", f"minicluster:fluxView.path {spec.flux_view.path} is also a volume's path")


def _overlay(spec: MiniClusterSpec) -> Iterator[Problem]:
    """A brokerConfig with its own [tbon] table is used as written: the keys that would go there clash."""
    if spec.broker_config is None or "tbon" not in tomllib.loads(spec.broker_config):
        return
    for field, key in (("connect_timeout", "connectTimeout"), ("topology", "topology")):
        if field in spec.model_fields_set:
            yield Problem(
                key,
                f"minicluster:{key} goes into broker.toml's [tbon] table, and minicluster:brokerConfig has its own: "
                "set it there, or remove the [tbon] table",
            )


def _state_volume(spec: MiniClusterSpec) -> Iterator[Problem]:
    volume = spec.state_volume
    if volume is None:
        return
    if not spec.persistent:
        yield Problem(
            "stateVolume",
            "minicluster:stateVolume keeps a persistent instance's queue for a replaced rank 0; with "
            f"minicluster:command in mode {spec.mode!r}, a replaced rank 0 runs the command again and has "
            "nothing to keep: unset one of them",
        )
        return
    one_node = spec.largest_size == 1 or pinned_to_one_node(spec)
    if volume.host_path is not None and not one_node:
        yield Problem(
            "stateVolume.hostPath",
            "minicluster:stateVolume.hostPath is a different directory on each node, and a rank 0 replaced "
            f"on another node would not find its state: use claimName, or {PIN}",
        )
    elif volume.access_mode == "ReadWriteOnce" and not one_node:
        yield Problem(
            "stateVolume.accessMode",
            "minicluster:stateVolume: a ReadWriteOnce claim mounts on one node only and every pod mounts it, "
            f"while the pods spread over nodes: use a ReadWriteMany claim, or {PIN}",
        )
    elif one_node and spec.pod.one_pod_per_node and spec.largest_size > 1:
        yield Problem(
            "stateVolume",
            "minicluster:stateVolume pins the pods to one node, and minicluster:pod.onePodPerNode spreads them",
        )


def _shared_memory(spec: MiniClusterSpec) -> Iterator[Problem]:
    if spec.shared_memory is None or "shared_memory" not in spec.model_fields_set:
        return  # the default gives way to a volume of the user's at /dev/shm (spec.shared_memory_size)
    for name, volume in spec.volumes.items():
        if volume.path.rstrip("/") == paths.SHARED_MEMORY_DIR:
            yield Problem(
                "sharedMemory",
                f"minicluster:volumes.{name} is mounted at {paths.SHARED_MEMORY_DIR}, where minicluster:sharedMemory "
                "puts the pods' memory-backed /dev/shm: set sharedMemory to none to use your own volume there",
            )
    # Only a size the user gave: Kubernetes caps the default at the pod's memory limit by itself.
    limit = spec.resources.limits.get("memory")
    if limit is not None and rules.quantity(spec.shared_memory) > rules.quantity(limit):
        yield Problem(
            "sharedMemory",
            f"minicluster:sharedMemory {spec.shared_memory} is more than the Flux container's memory limit "
            f"(minicluster:resources.limits.memory {limit}), which what /dev/shm holds counts against",
        )


RULES: tuple[Callable[[MiniClusterSpec], Iterator[Problem]], ...] = (
    _sizes, _elastic_only, _names, _modes, _command_words, _certificate, _containers, _ports_and_paths, _overlay,
    _state_volume, _shared_memory, production.problems,
)  # fmt: skip
