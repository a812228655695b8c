#!/usr/bin/env python3
"""Operate a deployed MiniCluster: its stack file says which one; the current kubeconfig context says where.

    python scripts/minicluster.py list   --stack dev      # pods: rank, phase, node, restarts, age
    python scripts/minicluster.py logs   --stack dev [--rank I] [--follow]
    python scripts/minicluster.py wait   --stack dev [--timeout S]   # live progress; exits with the Job's result
    python scripts/minicluster.py status --stack dev      # Job state, pods per phase, indexes, age
    python scripts/minicluster.py exec   --stack dev [--rank I] -- flux resource list

Exit codes: 0 success; 1 the Job failed (wait) or the command failed (exec); 2 a usage or config error;
3 the cluster, namespace or MiniCluster cannot be found; 4 wait timed out.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from components import kube, stack_file
from components.manifests import BROKER_CONTAINER, LOCAL_URI, labels
from components.names import INDEX_LABEL
from components.spec import ConfigError, MiniClusterSpec

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_TIMEOUT = 0, 1, 2, 3, 4


class NotFound(RuntimeError):
    """The cluster, the namespace or the MiniCluster is not there: one clear line, exit 3."""


@dataclass(frozen=True)
class Apis:
    core: Any  # CoreV1Api-like
    batch: Any  # BatchV1Api-like


# -- reading the cluster --------------------------------------------------------------------------


def broker_pods(apis: Apis, spec: MiniClusterSpec) -> list[Any]:
    """This MiniCluster's broker pods only (not its keygen pod, not another MiniCluster's), by rank."""
    selector = ",".join(f"{key}={value}" for key, value in labels(spec, "broker").items())
    pods = _call(apis, spec, lambda: apis.core.list_namespaced_pod(spec.namespace, label_selector=selector)).items
    return sorted(pods, key=lambda pod: (rank_of(pod), pod.metadata.creation_timestamp or datetime.min))


def rank_of(pod: Any) -> int:
    value = (pod.metadata.labels or {}).get(INDEX_LABEL) or (pod.metadata.annotations or {}).get(INDEX_LABEL)
    return int(value) if value is not None else -1


def read_job(apis: Apis, spec: MiniClusterSpec) -> Any:
    """Every subcommand starts here, so a stack that was never deployed is reported as such."""
    return _call(apis, spec, lambda: apis.batch.read_namespaced_job(spec.name, spec.namespace))


def _call(apis: Apis, spec: MiniClusterSpec, request: Callable[[], Any]) -> Any:
    """One API request, with the ways it commonly fails turned into one clear line."""
    try:
        return request()
    except Exception as error:
        status = getattr(error, "status", None)
        if status is None:
            raise NotFound(
                f"cannot reach the Kubernetes cluster ({type(error).__name__}); check `kubectl cluster-info`"
            ) from None
        if status == 404:
            raise NotFound(_missing(apis, spec)) from None
        raise


def _missing(apis: Apis, spec: MiniClusterSpec) -> str:
    try:
        apis.core.read_namespace(spec.namespace)
    except Exception as error:
        if getattr(error, "status", None) == 404:
            return f"namespace {spec.namespace!r} does not exist: is minicluster:namespace right, and the context?"
    return f"MiniCluster {spec.name!r} is not deployed in namespace {spec.namespace!r}: run `pulumi up --stack <stack>`"


# -- summaries (pure) -----------------------------------------------------------------------------


def age(timestamp: datetime | None, now: datetime) -> str:
    if timestamp is None:
        return "-"
    seconds = int((now - timestamp).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def restarts(pod: Any) -> int:
    return sum(status.restart_count for status in (pod.status.container_statuses or []))


def pod_rows(pods: Iterable[Any], now: datetime) -> list[tuple[str, ...]]:
    return [
        (str(rank_of(pod)), pod.metadata.name, pod.status.phase, pod.spec.node_name or "-", str(restarts(pod)),
         age(pod.metadata.creation_timestamp, now))
        for pod in pods
    ]  # fmt: skip


def job_state(job: Any) -> str:
    for condition in job.status.conditions or []:
        if condition.status == "True" and condition.type in ("Complete", "Failed", "Suspended"):
            reason = f" ({condition.reason})" if condition.reason else ""
            return f"{condition.type}{reason}"
    return "Running"


def status_rows(job: Any, pods: Sequence[Any], now: datetime) -> list[tuple[str, str]]:
    phases = Counter(pod.status.phase for pod in pods)
    return [
        ("job", f"{job.metadata.namespace}/{job.metadata.name}"),
        ("state", job_state(job)),
        ("pods", ", ".join(f"{count} {phase}" for phase, count in sorted(phases.items())) or "none"),
        ("completed indexes", job.status.completed_indexes or "none"),
        ("failed indexes", getattr(job.status, "failed_indexes", None) or "none"),
        ("age", age(job.metadata.creation_timestamp, now)),
    ]


@dataclass(frozen=True)
class Progress:
    """Where a MiniCluster is on its way up and through its work."""

    size: int
    scheduled: int
    running: int
    stage: str
    exit_code: int | None  # set once there is nothing more to wait for


def progress(job: Any, pods: Sequence[Any], spec: MiniClusterSpec) -> Progress:
    scheduled = sum(1 for pod in pods if pod.spec.node_name)
    running = sum(1 for pod in pods if pod.status.phase == "Running")
    state = job_state(job)
    if state.startswith("Complete"):
        return Progress(spec.size, scheduled, running, "the job completed", EXIT_OK)
    if state.startswith("Failed"):
        return Progress(spec.size, scheduled, running, f"the job failed: {state}", EXIT_FAILED)
    if scheduled < spec.size:
        return Progress(spec.size, scheduled, running, "scheduling pods", None)
    if running < spec.size:
        return Progress(spec.size, scheduled, running, "starting brokers", None)
    if spec.persistent:
        return Progress(spec.size, scheduled, running, "every broker is up; the instance stays up", EXIT_OK)
    return Progress(spec.size, scheduled, running, "Flux is up; the command is running", None)


# -- subcommands ----------------------------------------------------------------------------------


def cmd_list(apis: Apis, spec: MiniClusterSpec, console: Console) -> int:
    read_job(apis, spec)
    table = Table("rank", "pod", "phase", "node", "restarts", "age", title=f"MiniCluster {spec.name}")
    for row in pod_rows(broker_pods(apis, spec), datetime.now(UTC)):
        table.add_row(*row)
    console.print(table)
    return EXIT_OK


def cmd_status(apis: Apis, spec: MiniClusterSpec, console: Console) -> int:
    job = read_job(apis, spec)
    table = Table("", "", show_header=False, title=f"MiniCluster {spec.name}")
    for key, value in status_rows(job, broker_pods(apis, spec), datetime.now(UTC)):
        table.add_row(key, value)
    console.print(table)
    return EXIT_OK


def cmd_logs(apis: Apis, spec: MiniClusterSpec, console: Console, rank: int, follow: bool) -> int:
    pod = pod_of_rank(apis, spec, rank)
    stream = _call(
        apis,
        spec,
        lambda: apis.core.read_namespaced_pod_log(
            pod.metadata.name, spec.namespace, container=BROKER_CONTAINER, follow=follow, _preload_content=False
        ),
    )
    for chunk in stream.stream():
        console.file.write(chunk.decode(errors="replace"))
    return EXIT_OK


def cmd_wait(
    apis: Apis,
    spec: MiniClusterSpec,
    console: Console,
    timeout: float,
    poll: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    deadline = clock() + timeout
    with Live(console=console, transient=False, auto_refresh=False) as live:
        while True:
            state = progress(read_job(apis, spec), broker_pods(apis, spec), spec)
            live.update(
                f"[bold]{spec.name}[/]: {state.stage} (scheduled {state.scheduled}/{state.size}, "
                f"running {state.running}/{state.size})",
                refresh=True,
            )
            if state.exit_code is not None:
                return state.exit_code
            if clock() >= deadline:
                console.print(f"timed out after {timeout:g}s: {state.stage}")
                return EXIT_TIMEOUT
            sleep(poll)


def cmd_exec(apis: Apis, spec: MiniClusterSpec, console: Console, rank: int, command: list[str]) -> int:
    from kubernetes.stream import stream

    pod = pod_of_rank(apis, spec, rank)
    command = ["env", f"FLUX_URI={LOCAL_URI}", *command]  # so flux commands find this broker
    response = stream(
        apis.core.connect_get_namespaced_pod_exec, pod.metadata.name, spec.namespace, container=BROKER_CONTAINER,
        command=command, stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False,
    )  # fmt: skip
    response.run_forever()
    console.file.write(response.read_stdout() + response.read_stderr())
    return EXIT_OK if response.returncode in (0, None) else EXIT_FAILED


def pod_of_rank(apis: Apis, spec: MiniClusterSpec, rank: int) -> Any:
    read_job(apis, spec)
    for pod in broker_pods(apis, spec):
        if rank_of(pod) == rank:
            return pod
    raise NotFound(f"MiniCluster {spec.name!r} has no pod for rank {rank} (it has {spec.size}: 0-{spec.size - 1})")


# -- command line ---------------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("list", "status", "logs", "wait", "exec"):
        sub = commands.add_parser(name)
        sub.add_argument("--stack", default="dev", help="stack name: reads Pulumi.<stack>.yaml (default dev)")
        sub.add_argument("--context", help="kubeconfig context (default: the current one)")
        if name in ("logs", "exec"):
            sub.add_argument("--rank", type=int, default=0, help="which broker (default 0)")
        if name == "logs":
            sub.add_argument("--follow", "-f", action="store_true")
        if name == "wait":
            sub.add_argument("--timeout", type=float, default=3600, help="seconds (default 3600)")
        if name == "exec":
            sub.add_argument("exec_command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")
    return parser.parse_args(argv)


def connect(context: str | None) -> Apis:
    from kubernetes import client

    try:
        api = kube.api_client(context)
    except kube.NoCluster as error:
        raise NotFound(str(error)) from None
    return Apis(client.CoreV1Api(api), client.BatchV1Api(api))


def run(args: argparse.Namespace, apis: Apis, spec: MiniClusterSpec, console: Console) -> int:
    if args.command == "list":
        return cmd_list(apis, spec, console)
    if args.command == "status":
        return cmd_status(apis, spec, console)
    if args.command == "logs":
        return cmd_logs(apis, spec, console, args.rank, args.follow)
    if args.command == "wait":
        return cmd_wait(apis, spec, console, args.timeout)
    command = [word for word in args.exec_command if word != "--"] or [spec.flux_path, "resource", "list"]
    return cmd_exec(apis, spec, console, args.rank, command)


def main(argv: Sequence[str] | None = None, apis: Apis | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    console = Console()
    try:
        spec, _ = stack_file.load(stack_file.stack_path(args.stack))
        return run(args, apis or connect(args.context), spec, console)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)  # plain print: one line, never wrapped
        return EXIT_USAGE
    except NotFound as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
