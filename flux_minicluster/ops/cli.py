"""Operate a deployed MiniCluster: its stack file says which one, and where (its kubernetes:context and
kubernetes:kubeconfig, read with `pulumi config get` where they are encrypted; else the kubeconfig's
current context).

    minicluster list   --stack dev      # pods: rank, state (with the reason), node, restarts, age
    minicluster status --stack dev      # Job state, pods per phase, why pods wait, replacements, the keeper
    minicluster logs   --stack dev [--rank I | --all] [--follow]
    minicluster wait   --stack dev [--timeout S]   # live progress; exits with the Job's result
    minicluster exec   --stack dev [--rank I] [-i] -- flux resource list   # -i: send stdin to it

Exit codes: 0 success; 1 the Job failed (wait), the command failed (exec) or this tool failed;
2 a usage or config error (stack file, kubeconfig context); 3 the namespace, the MiniCluster or the
rank is not there, or was deleted while the command ran; 4 wait timed out; 5 the pod is not running
(not created, not scheduled, not started, restarting, or finished: exec); 6 the cluster cannot be
reached, or its API server is failing; 7 access denied (RBAC).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from flux_minicluster.builders.manifests import LOCAL_URI
from flux_minicluster.builders.names import keeper_name
from flux_minicluster.cluster import kube, objects
from flux_minicluster.cluster.deployed import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    Cluster,
    Failure,
    note,
)
from flux_minicluster.cluster.status import (
    SUCCEEDED,
    keeper_row,
    pod_rows,
    pod_state,
    progress,
    status_rows,
    without_pods,
)
from flux_minicluster.cluster.waiting import Clock, Wait
from flux_minicluster.config import stack_file
from flux_minicluster.config.loader import ConfigError
from flux_minicluster.ops import stack_secrets
from flux_minicluster.ops.logs import cmd_logs, cmd_logs_all

__all__ = ["Cluster", "Console", "cmd_wait", "main"]


def cmd_list(cluster: Cluster, console: Console) -> int:
    job = cluster.job()
    pods = cluster.pods()
    table = Table("rank", "pod", "state", "node", "restarts", "age", title=f"MiniCluster {cluster.spec.name}")
    for row in pod_rows(pods, datetime.now(UTC)):
        table.add_row(*row)
    console.print(table)
    if not pods:
        note(f"no broker pods: {without_pods(job)}")
    return EXIT_OK


def cmd_status(cluster: Cluster, console: Console) -> int:
    job, pods = cluster.job(), cluster.pods()
    table = Table("", "", show_header=False, box=None, title=f"MiniCluster {cluster.spec.name}")
    now, spec = datetime.now(UTC), cluster.spec
    kept = [("keeper", keeper_row(cluster.keeper_pods(), now, keeper_name(spec)))] if spec.keeper.enabled else []
    for key, value in [*status_rows(job, pods, now, cluster.events(), spec), *kept, *_flux(cluster, pods)]:
        table.add_row(key, value)
    console.print(table)
    return EXIT_OK


def _flux(cluster: Cluster, pods: list[Any]) -> list[tuple[str, str]]:
    """Flux's own view, when rank 0 runs; one line saying why not, when it cannot be had."""
    rank0 = next((pod for pod in pods if objects.pod_rank(pod) == 0 and pod_state(pod).running), None)
    if rank0 is None:
        return []
    try:
        return cluster.flux_view(rank0)
    except Failure as failure:
        if failure.exit_code == EXIT_NOT_FOUND:  # deleted meanwhile: that is the answer
            raise
        return [("flux", f"Flux's own view is not available: {failure}")]


def cmd_wait(cluster: Cluster, console: Console, timeout: float, clock: Clock | None = None) -> int:
    spec, wait = cluster.spec, Wait(timeout, clock or Clock(poll=2.0))
    with Live(console=console, transient=False, auto_refresh=False) as live:
        while True:
            state = progress(cluster.job(), cluster.pods(), spec)
            live.update(
                f"[bold]{spec.name}[/]: {state.line()} (scheduled {state.scheduled}/{state.size}, "
                f"running {state.running}/{state.size})",
                refresh=True,
            )
            if state.outcome is not None:
                return EXIT_OK if state.outcome == SUCCEEDED else EXIT_FAILED
            if wait.over:
                raise Failure(EXIT_TIMEOUT, f"timed out after {timeout:g}s: {state.line()}")
            wait.pause()


def cmd_exec(cluster: Cluster, rank: int, command: list[str], stdin: BinaryIO | None = None) -> int:
    """Its output as it comes (a long `flux run` shows its progress); `stdin` is sent as its input."""
    pod = cluster.pod_of_rank(rank)
    state = pod_state(pod)
    if state.finished:
        raise Failure(EXIT_NOT_RUNNING, f"rank {rank}'s pod has finished: {state}; nothing runs there to exec into")
    if not state.running:
        raise Failure(EXIT_NOT_RUNNING, f"rank {rank}'s broker is not running: {state}; see `status`")
    try:
        code = cluster.stream(pod, ["env", f"FLUX_URI={LOCAL_URI}", *command], stdin)  # finds this broker
    except KeyboardInterrupt:
        note(
            f"interrupted: the command goes on in {pod.metadata.name} (an exec's end does not stop it, as with kubectl)"
        )
        raise
    if code is None:
        note("the connection ended before the command's exit status came: it may still run, or not have run")
        return EXIT_FAILED
    if code:
        note(f"the command exited with status {code}")
        return EXIT_FAILED
    return EXIT_OK


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("list", "status", "logs", "wait", "exec"):
        sub = commands.add_parser(name)
        sub.add_argument("--stack", default="dev", help="stack name: reads Pulumi.<stack>.yaml (default dev)")
        sub.add_argument(
            "--context", help="kubeconfig context (default: the stack's kubernetes:context, else the current one)"
        )
        sub.add_argument(
            "--kubeconfig", help="kubeconfig file (default: the stack's kubernetes:kubeconfig, else KUBECONFIG)"
        )
        if name in ("logs", "exec"):
            sub.add_argument("--rank", type=int, default=0, help="which broker (default 0)")
        if name == "exec":
            sub.add_argument("--stdin", "-i", action="store_true", help="send this standard input to the command")
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
    return cmd_exec(cluster, args.rank, command, sys.stdin.buffer if args.stdin else None)


def _stack_cluster(args: argparse.Namespace, path: Path) -> tuple[str | None, str | None]:
    """The context and kubeconfig of the cluster `pulumi up` of the stack deploys to: its own
    kubernetes:context and kubernetes:kubeconfig (read by pulumi where they are encrypted), unless
    given here; else the current context of KUBECONFIG."""
    context, kubeconfig = stack_file.kubernetes_settings(path)
    encrypted = stack_file.encrypted_kubernetes_settings(path)
    if args.context is None and "kubernetes:context" in encrypted:
        context = stack_secrets.decrypted(args.stack, "kubernetes:context", path.parent)
    if args.kubeconfig is None and "kubernetes:kubeconfig" in encrypted:
        kubeconfig = stack_secrets.decrypted(args.stack, "kubernetes:kubeconfig", path.parent)
    return args.context or context, args.kubeconfig or kubeconfig


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Off a terminal (a pipe, a file), a table keeps each row on one line.
    console = Console() if sys.stdout.isatty() else Console(width=250)
    try:
        path = stack_file.stack_path(args.stack)
        spec, _ = stack_file.load(path)
        cluster = Cluster(kube.api_client(*_stack_cluster(args, path)), spec, args.stack)
        return run(args, cluster, console)
    except (ConfigError, kube.NoCluster) as error:
        print(f"error: {error}", file=sys.stderr)  # plain print: one line, never wrapped
        return EXIT_USAGE
    except Failure as failure:
        print(f"error: {failure}", file=sys.stderr)
        return failure.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
