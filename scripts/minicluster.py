#!/usr/bin/env python3
"""Operate a deployed MiniCluster: its stack file says which one; the kubeconfig context says where.

    python scripts/minicluster.py list   --stack dev      # pods: rank, state (with the reason), node, restarts, age
    python scripts/minicluster.py status --stack dev      # Job state, pods per phase, why pods wait, replacements
    python scripts/minicluster.py logs   --stack dev [--rank I | --all] [--follow]
    python scripts/minicluster.py wait   --stack dev [--timeout S]   # live progress; exits with the Job's result
    python scripts/minicluster.py exec   --stack dev [--rank I] -- flux resource list

Exit codes: 0 success; 1 the Job failed (wait), the command failed (exec) or this tool failed;
2 a usage or config error (stack file, kubeconfig context); 3 the namespace, the MiniCluster or the
rank is not there, or was deleted while the command ran; 4 wait timed out; 5 the pod is not running
(not created, not scheduled, not started, restarting, or finished: exec); 6 the cluster cannot be
reached, or its API server is failing; 7 access denied (RBAC).
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from components.builders.manifests import BROKER_CONTAINER, LOCAL_URI, labels
from components.cluster import kube
from components.config import stack_file
from components.config.loader import ConfigError
from components.config.spec import MiniClusterSpec

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_TIMEOUT = 0, 1, 2, 3, 4
EXIT_NOT_RUNNING, EXIT_UNREACHABLE, EXIT_DENIED, EXIT_INTERRUPTED = 5, 6, 7, 130
STREAM_TIMEOUT = (kube.REQUEST_TIMEOUT[0], 7 * 24 * 3600.0)
"""A followed log may be silent for as long as the broker is (the client takes no "never" here)."""


class Failure(RuntimeError):
    """One clear line for the user, and the exit code that goes with it."""

    def __init__(self, exit_code: int, message: str, problem: kube.ApiProblem | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.problem = problem
        """The failed request behind it, if any."""


def note(message: str) -> None:
    """What the user should know beside the output (which stays clean for pipes)."""
    print(message, file=sys.stderr, flush=True)


# -- what a pod is doing (pure) -------------------------------------------------------------------


@dataclass(frozen=True)
class PodState:
    label: str
    """Running, Pending, ContainerCreating, CrashLoopBackOff, ImagePullBackOff, Succeeded, Failed, …"""
    detail: str = ""
    """The scheduler's or the kubelet's own words, or the exit code."""
    has_log: bool = False
    running: bool = False
    finished: bool = False
    restarting: bool = False
    """Its broker exited and waits to be started again: the log worth reading is the last run's."""

    def __str__(self) -> str:
        return f"{self.label} ({self.detail})" if self.detail else self.label


def pod_state(pod: Any) -> PodState:
    status = pod.status
    if status.phase in ("Succeeded", "Failed"):
        code = _exit_code(pod)
        detail = f"exit {code}" if code is not None else (status.reason or "")
        return PodState(status.phase, detail, has_log=pod.spec.node_name is not None, finished=True)
    if pod.metadata.deletion_timestamp is not None:
        return PodState("Terminating", has_log=True)
    if not pod.spec.node_name:
        return PodState("Pending", kube.not_scheduled(pod.status) or "waiting for the scheduler")
    broker = _broker_status(pod)
    if broker is None or broker.state is None:
        return PodState("PodInitializing", _init_waiting(pod))
    if broker.state.running is not None:
        return PodState("Running", has_log=True, running=True)
    waiting = broker.state.waiting
    if waiting is not None:
        restarted = broker.restart_count > 0
        detail = waiting.message or (f"restarted {broker.restart_count} times" if restarted else "")
        return PodState(waiting.reason or "Waiting", detail, has_log=restarted, restarting=restarted)
    return PodState(status.phase or "Unknown", has_log=True)


def _broker_status(pod: Any) -> Any:
    return next((s for s in pod.status.container_statuses or [] if s.name == BROKER_CONTAINER), None)


def _exit_code(pod: Any) -> int | None:
    broker = _broker_status(pod)
    terminated = broker.state.terminated if broker is not None and broker.state is not None else None
    return int(terminated.exit_code) if terminated is not None else None


def _init_waiting(pod: Any) -> str:
    for status in pod.status.init_container_statuses or []:
        waiting = status.state.waiting if status.state else None
        if waiting is not None:
            return f"{status.name}: {waiting.reason}" + (f": {waiting.message}" if waiting.message else "")
    return ""


def age(timestamp: datetime | None, now: datetime) -> str:
    if timestamp is None:
        return "-"
    seconds = max(0, int((now - timestamp).total_seconds()))  # a skewed clock is no reason for "-5s"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def restarts(pod: Any) -> int:
    return sum(status.restart_count for status in (pod.status.container_statuses or []))


def pod_rows(pods: Sequence[Any], now: datetime) -> list[tuple[str, ...]]:
    return [
        (str(kube.pod_rank(pod)), pod.metadata.name, str(pod_state(pod)), pod.spec.node_name or "-", str(restarts(pod)),
         age(pod.metadata.creation_timestamp, now))
        for pod in pods
    ]  # fmt: skip


def job_state(job: Any) -> str:
    for condition in job.status.conditions or []:
        if condition.status == "True" and condition.type in ("Complete", "Failed", "Suspended"):
            reason = f" ({condition.reason})" if condition.reason else ""
            return f"{condition.type}{reason}"
    return "Running"


def waiting_reasons(pods: Sequence[Any]) -> list[str]:
    """Why pods that should run do not, one line per rank."""
    return [f"rank {kube.pod_rank(pod)}: {pod_state(pod)}" for pod in pods if not _settled(pod_state(pod))]


def _settled(state: PodState) -> bool:
    return state.running or state.finished


def replacements(job_name: str, pods: Sequence[Any], events: Sequence[Any]) -> dict[int, list[str]]:
    """Ranks whose pod was replaced, with why each earlier pod went: what the pod still says (a
    DisruptionTarget condition, an exit code), else its last event (the pod may be gone)."""
    created = {
        event.message.removeprefix("Created pod: "): _when(event)
        for event in events
        if event.reason == "SuccessfulCreate" and event.involved_object.name == job_name
    } | {pod.metadata.name: pod.metadata.creation_timestamp for pod in pods}
    by_rank: dict[int, list[str]] = {}
    for name in sorted(created, key=lambda name: (created[name] or datetime.min.replace(tzinfo=UTC), name)):
        index = name.removeprefix(f"{job_name}-").rsplit("-", 1)[0]
        if index.isdigit():
            by_rank.setdefault(int(index), []).append(name)
    found = {pod.metadata.name: pod for pod in pods}
    return {  # the newest pod of a rank is its current one; every earlier one was replaced
        rank: [_why_gone(name, found.get(name), events) for name in names[:-1]]
        for rank, names in by_rank.items()
        if len(names) > 1
    }


def _when(event: Any) -> datetime | None:
    when: datetime | None = event.first_timestamp or event.event_time or event.metadata.creation_timestamp
    return when


def _why_gone(name: str, pod: Any, events: Sequence[Any]) -> str:
    for condition in (pod.status.conditions or []) if pod is not None else []:
        if condition.type == "DisruptionTarget" and condition.status == "True":
            return f"{condition.reason}: {condition.message}" if condition.message else str(condition.reason)
    if pod is not None and pod_state(pod).finished:
        return str(pod_state(pod))
    said = [event for event in events if event.involved_object.name == name]
    return f"{said[-1].reason}: {said[-1].message}" if said else "deleted"


def live_size(job: Any, spec: MiniClusterSpec) -> int:
    """The Job's own size: a resize changes it before the pods follow (the stack's size is the goal)."""
    return int(job.spec.completions or spec.size) if job.spec is not None else spec.size


def size_row(job: Any, spec: MiniClusterSpec) -> str:
    size = live_size(job, spec)
    line = f"{size} (minSize {spec.min_size or 1}, maxSize {spec.largest_size})"
    if spec.size != size:
        line += f"; the stack config says {spec.size}: a resize is under way, or run `pulumi up`"
    return line


def ranks_row(pods: Sequence[Any], size: int) -> str:
    """Which ranks are in which state, as rank ranges: "Running 0-3; Pending 4-5; leaving 6"."""
    by_state: dict[str, list[int]] = {}
    for pod in pods:
        rank = kube.pod_rank(pod)
        state = "leaving" if rank >= size else pod_state(pod).label
        by_state.setdefault(state, []).append(rank)
    return "; ".join(f"{state} {_ranges(sorted(set(ranks)))}" for state, ranks in by_state.items()) or "none yet"


def _ranges(ranks: list[int]) -> str:
    runs: list[list[int]] = []
    for rank in ranks:
        if runs and rank == runs[-1][-1] + 1:
            runs[-1].append(rank)
        else:
            runs.append([rank])
    return ",".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def status_rows(
    job: Any, pods: Sequence[Any], now: datetime, events: Sequence[Any], spec: MiniClusterSpec
) -> list[tuple[str, str]]:
    phases = Counter(pod.status.phase for pod in pods)
    replaced = replacements(job.metadata.name, pods, events)
    return [
        ("job", f"{job.metadata.namespace}/{job.metadata.name}"),
        ("state", job_state(job)),
        ("size", size_row(job, spec)),
        ("ranks", ranks_row(pods, live_size(job, spec))),
        ("pods", ", ".join(f"{count} {phase}" for phase, count in sorted(phases.items())) or "none yet"),
        *(("waiting", reason) for reason in waiting_reasons(pods)),
        *(
            ("replaced", f"rank {rank}: {len(whys)} time{'s' if len(whys) > 1 else ''} ({'; '.join(whys)})")
            for rank, whys in sorted(replaced.items())
        ),
        ("completed indexes", job.status.completed_indexes or "none"),
        ("failed indexes", job.status.failed_indexes or "none"),
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
    reason: str = ""

    def line(self) -> str:
        why = f" ({self.reason})" if self.reason else ""
        return f"{self.stage}{why}"


def progress(job: Any, pods: Sequence[Any], spec: MiniClusterSpec) -> Progress:
    """Against the size the stack asks for: after `pulumi config set minicluster:size`, until the
    resize has happened, the MiniCluster is on its way to that size."""
    pods = [pod for pod in pods if kube.pod_rank(pod) < spec.size]
    scheduled = sum(1 for pod in pods if pod.spec.node_name)
    running = sum(1 for pod in pods if pod_state(pod).running)
    reasons = waiting_reasons(pods)
    reason = reasons[0] if reasons else ""
    state = job_state(job)

    def at(stage: str, exit_code: int | None = None) -> Progress:
        return Progress(spec.size, scheduled, running, stage, exit_code, "" if exit_code is not None else reason)

    if state.startswith("Complete"):
        return at("the job completed", EXIT_OK)
    if state.startswith("Failed"):
        return at(f"the job failed: {state}", EXIT_FAILED)
    if not pods:
        return at("waiting for the Job's pods")
    if scheduled < spec.size:
        return at("scheduling pods")
    if running < spec.size:
        return at("starting brokers")
    if live_size(job, spec) != spec.size:
        return at(f"resizing from {live_size(job, spec)} to {spec.size} brokers")
    if spec.persistent:
        return at("every broker is up; the instance stays up", EXIT_OK)
    return at("Flux is up; the command is running")


# -- reading the cluster --------------------------------------------------------------------------


class Cluster:
    """This stack's MiniCluster as the API server sees it. Every failed request becomes a Failure."""

    def __init__(self, api_client: Any, spec: MiniClusterSpec) -> None:
        from kubernetes import client

        self.core, self.batch, self.spec = client.CoreV1Api(api_client), client.BatchV1Api(api_client), spec
        self.host = api_client.configuration.host
        self.job_seen = False

    def call(self, request: Callable[[], Any], missing: Callable[[], Failure] | None = None) -> Any:
        try:
            return request()
        except Failure:
            raise
        except Exception as error:
            found = kube.problem(error)
            if found.kind == "not-found":
                raise (missing or self._missing)() from None
            raise self._failure(found) from None

    def call_on_pod(self, pod: Any, request: Callable[[], Any]) -> Any:
        """A request that needs the pod's container running: a 400 means it stopped (or never ran) meanwhile."""
        name = pod.metadata.name
        try:
            return self.call(request, missing=lambda: self._gone(name))
        except Failure as failure:
            if failure.problem is not None and failure.problem.status == 400:
                message = f"pod {name} is not running: {failure.problem.detail}; see `status`"
                raise Failure(EXIT_NOT_RUNNING, message) from None
            raise

    def _failure(self, found: kube.ApiProblem) -> Failure:
        namespace = self.spec.namespace
        if found.kind == "unreachable":
            return Failure(
                EXIT_UNREACHABLE,
                f"cannot reach the Kubernetes cluster at {self.host} ({found.detail}); "
                "check `kubectl cluster-info` and --context",
            )
        if found.kind == "server-error":
            return Failure(EXIT_UNREACHABLE, f"the Kubernetes API server failed ({found.status}: {found.detail})")
        if found.kind == "denied":
            return Failure(
                EXIT_DENIED,
                f"access denied ({found.status}: {found.detail}); this needs get, list and watch on jobs and pods, "
                f"list on events, get on pods/log and create on pods/exec in namespace {namespace!r}",
            )
        if found.kind == "client-side":
            return Failure(EXIT_FAILED, f"this tool failed: the Kubernetes client refused its request ({found.detail})")
        return Failure(EXIT_FAILED, f"the Kubernetes API refused the request ({found.status}: {found.detail})", found)

    def _missing(self) -> Failure:
        spec = self.spec
        if self.job_seen:
            return Failure(
                EXIT_NOT_FOUND,
                f"MiniCluster {spec.name!r} was deleted while this command ran "
                "(pulumi destroy, or a replacement of its Job)",
            )
        try:
            self.core.read_namespace(spec.namespace, _request_timeout=kube.REQUEST_TIMEOUT)
        except Exception as error:
            if kube.problem(error).kind == "not-found":
                return Failure(
                    EXIT_NOT_FOUND,
                    f"namespace {spec.namespace!r} does not exist: is minicluster:namespace right, and the context?",
                )
        return Failure(
            EXIT_NOT_FOUND,
            f"MiniCluster {spec.name!r} is not deployed in namespace {spec.namespace!r}: "
            "run `pulumi up --stack <stack>`",
        )

    def job(self) -> Any:
        """Every subcommand starts here, so a stack that was never deployed is reported as such."""
        spec = self.spec
        found = self.call(
            lambda: self.batch.read_namespaced_job(spec.name, spec.namespace, _request_timeout=kube.REQUEST_TIMEOUT)
        )
        self.job_seen = True
        return found

    def pods(self) -> list[Any]:
        """This MiniCluster's broker pods only (not its keygen pod, not another MiniCluster's), by rank.
        None at all: the Job is read again, so that a MiniCluster deleted meanwhile is said to be."""
        selector = kube.label_selector(labels(self.spec, "broker"))
        found = self.call(
            lambda: self.core.list_namespaced_pod(
                self.spec.namespace, label_selector=selector, _request_timeout=kube.REQUEST_TIMEOUT
            )
        ).items
        if not found and self.job_seen:
            self.job()
        return sorted(found, key=lambda pod: (kube.pod_rank(pod), pod.metadata.creation_timestamp or datetime.min))

    def events(self) -> list[Any]:
        """The namespace's events (to say why pods were replaced); none if they may not be read."""
        try:
            found = self.call(
                lambda: self.core.list_namespaced_event(self.spec.namespace, _request_timeout=kube.REQUEST_TIMEOUT)
            )
        except Failure as failure:
            if failure.exit_code != EXIT_DENIED:
                raise
            note("the namespace's events may not be read: why pods were replaced is shown only from the pods")
            return []
        return list(found.items or [])

    def pod_of_rank(self, rank: int) -> Any:
        spec = self.spec
        size = live_size(self.job(), spec)
        if not 0 <= rank < size:
            raise Failure(EXIT_NOT_FOUND, f"MiniCluster {spec.name!r} has no rank {rank} (it has {size}: 0-{size - 1})")
        for pod in self.pods():
            if kube.pod_rank(pod) == rank:
                return pod
        raise Failure(EXIT_NOT_RUNNING, f"rank {rank} has no pod yet (the Job has not created it); see `status`")

    def log_lines(self, pod: Any, *, follow: bool, previous: bool) -> Iterator[str]:
        from kubernetes.watch.watch import iter_resp_lines

        response = self.call_on_pod(
            pod,
            lambda: self.core.read_namespaced_pod_log(
                pod.metadata.name, self.spec.namespace, container=BROKER_CONTAINER, follow=follow, previous=previous,
                _preload_content=False, _request_timeout=STREAM_TIMEOUT if follow else kube.REQUEST_TIMEOUT,
            ),
        )  # fmt: skip
        try:
            yield from iter_resp_lines(response)  # type: ignore[no-untyped-call]
        except Exception as error:  # the connection dropped mid-stream
            raise self._failure(kube.problem(error)) from None
        finally:
            response.release_conn()

    def _gone(self, pod_name: str) -> Failure:
        return Failure(
            EXIT_NOT_FOUND,
            f"MiniCluster {self.spec.name!r} was deleted while this command ran (its pod {pod_name} is gone)",
        )

    def exec(self, pod: Any, command: list[str]) -> tuple[str, str, int | None]:
        name, namespace = pod.metadata.name, self.spec.namespace
        return self.call_on_pod(pod, lambda: kube.run_in_pod(self.core, namespace, name, BROKER_CONTAINER, command))  # type: ignore[no-any-return]


# -- subcommands ----------------------------------------------------------------------------------


def cmd_list(cluster: Cluster, console: Console) -> int:
    cluster.job()
    pods = cluster.pods()
    table = Table("rank", "pod", "state", "node", "restarts", "age", title=f"MiniCluster {cluster.spec.name}")
    for row in pod_rows(pods, datetime.now(UTC)):
        table.add_row(*row)
    console.print(table)
    if not pods:
        note("no broker pods yet: the Job exists, and Kubernetes has not created its pods")
    return EXIT_OK


def cmd_status(cluster: Cluster, console: Console) -> int:
    job = cluster.job()
    table = Table("", "", show_header=False, box=None, title=f"MiniCluster {cluster.spec.name}")
    for key, value in status_rows(job, cluster.pods(), datetime.now(UTC), cluster.events(), cluster.spec):
        table.add_row(key, value)
    console.print(table)
    return EXIT_OK


def cmd_logs(cluster: Cluster, rank: int, follow: bool) -> int:
    pod = cluster.pod_of_rank(rank)
    state = pod_state(pod)
    if not state.has_log:
        raise Failure(EXIT_NOT_RUNNING, f"rank {rank}'s pod {pod.metadata.name} has not started: {state}; see `status`")
    if state.restarting:
        note(f"rank {rank}'s broker is not running ({state}); the log of its last run:")
    shown = 0
    for line in cluster.log_lines(pod, follow=follow and not state.restarting, previous=state.restarting):
        print(line, flush=follow)
        shown += 1
    if not shown:
        note(f"rank {rank}'s log is empty so far")
    if state.label == "Failed":
        note(f"rank {rank}'s pod failed ({state.detail})")
    return EXIT_OK


def cmd_logs_all(cluster: Cluster, follow: bool) -> int:
    """Every rank's log, each line prefixed with its rank; following, lines come as the brokers write them."""
    size = live_size(cluster.job(), cluster.spec)
    by_rank = {kube.pod_rank(pod): pod for pod in cluster.pods()}
    readable = []
    for rank in range(size):
        pod = by_rank.get(rank)
        state = pod_state(pod) if pod is not None else None
        if state is None:
            note(f"rank {rank}: no pod yet")
        elif not state.has_log:
            note(f"rank {rank}: not started: {state}")
        else:
            readable.append((rank, pod, state.restarting))
    if not readable:
        raise Failure(EXIT_NOT_RUNNING, "no rank's broker has started yet; see `status`")
    lines = _merged if follow else _in_rank_order
    for rank, line in lines(cluster, readable, follow):
        print(f"[rank {rank}] {line}", flush=follow)
    return EXIT_OK


def _in_rank_order(cluster: Cluster, readable: list[tuple[int, Any, bool]], _follow: bool) -> Iterator[tuple[int, str]]:
    for rank, pod, previous in readable:
        for line in cluster.log_lines(pod, follow=False, previous=previous):
            yield rank, line


def _merged(cluster: Cluster, readable: list[tuple[int, Any, bool]], _follow: bool) -> Iterator[tuple[int, str]]:
    """One reader thread per rank; lines are printed as they arrive, a failure ends them all."""
    lines: queue.Queue[tuple[int, str] | Failure | None] = queue.Queue()

    def read(rank: int, pod: Any, previous: bool) -> None:
        try:
            for line in cluster.log_lines(pod, follow=not previous, previous=previous):
                lines.put((rank, line))
        except Failure as failure:
            lines.put(failure)
        finally:
            lines.put(None)

    for reader in readable:
        threading.Thread(target=read, args=reader, daemon=True).start()
    open_streams = len(readable)
    while open_streams:
        item = lines.get()
        if item is None:
            open_streams -= 1
        elif isinstance(item, Failure):
            raise item
        else:
            yield item


def cmd_wait(
    cluster: Cluster,
    console: Console,
    timeout: float,
    poll: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    spec = cluster.spec
    deadline = clock() + timeout
    with Live(console=console, transient=False, auto_refresh=False) as live:
        while True:
            state = progress(cluster.job(), cluster.pods(), spec)
            live.update(
                f"[bold]{spec.name}[/]: {state.line()} (scheduled {state.scheduled}/{state.size}, "
                f"running {state.running}/{state.size})",
                refresh=True,
            )
            if state.exit_code is not None:
                return state.exit_code
            if clock() >= deadline:
                raise Failure(EXIT_TIMEOUT, f"timed out after {timeout:g}s: {state.line()}")
            sleep(max(0.0, min(poll, deadline - clock())))


def cmd_exec(cluster: Cluster, rank: int, command: list[str]) -> int:
    pod = cluster.pod_of_rank(rank)
    state = pod_state(pod)
    if state.finished:
        raise Failure(EXIT_NOT_RUNNING, f"rank {rank}'s pod has finished: {state}; nothing runs there to exec into")
    if not state.running:
        raise Failure(EXIT_NOT_RUNNING, f"rank {rank}'s broker is not running: {state}; see `status`")
    stdout, stderr, code = cluster.exec(pod, ["env", f"FLUX_URI={LOCAL_URI}", *command])  # finds this broker
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    if code is None:
        note("the connection ended before the command's exit status came: it may still run, or not have run")
        return EXIT_FAILED
    if code:
        note(f"the command exited with status {code}")
        return EXIT_FAILED
    return EXIT_OK


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
            sub.add_argument("--all", action="store_true", help="every rank, each line prefixed with its rank")
            sub.add_argument("--follow", "-f", action="store_true")
        if name == "wait":
            sub.add_argument("--timeout", type=float, default=3600, help="seconds (default 3600)")
        if name == "exec":
            sub.add_argument("exec_command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")
    return parser.parse_args(argv)


def run(args: argparse.Namespace, cluster: Cluster, console: Console) -> int:
    if args.command == "list":
        return cmd_list(cluster, console)
    if args.command == "status":
        return cmd_status(cluster, console)
    if args.command == "logs":
        return cmd_logs_all(cluster, args.follow) if args.all else cmd_logs(cluster, args.rank, args.follow)
    if args.command == "wait":
        return cmd_wait(cluster, console, args.timeout)
    words = args.exec_command[1:] if args.exec_command[:1] == ["--"] else args.exec_command  # the separator only
    command = words or [cluster.spec.flux_path, "resource", "list"]
    return cmd_exec(cluster, args.rank, command)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Off a terminal (a pipe, a file), a table keeps each row on one line.
    console = Console() if sys.stdout.isatty() else Console(width=250)
    try:
        spec, _ = stack_file.load(stack_file.stack_path(args.stack))
        cluster = Cluster(kube.api_client(args.context), spec)
        return run(args, cluster, console)
    except (ConfigError, kube.NoCluster) as error:
        print(f"error: {error}", file=sys.stderr)  # plain print: one line, never wrapped
        return EXIT_USAGE
    except Failure as failure:
        print(f"error: {failure}", file=sys.stderr)
        return failure.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
