"""The ops tool (flux_minicluster/ops) with the real `kubernetes` client against the local API stand-in (issues 6, 10).

The states table (command x cluster state -> exit code and words) is read from docs/operating.md
and every cell is run here, so the table and the tool cannot disagree.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from flux_minicluster.builders.names import STOPPED
from flux_minicluster.cluster import flux_view
from flux_minicluster.config import paths
from flux_minicluster.ops import cli
from tests import flux_instance
from tests.harness import ROOT
from tests.kube_api import Cluster, finished, refused_url, running, unschedulable, waiting, write_kubeconfig
from tests.kube_api.samples import BROKER, DEV, broker_pod, job

FORBIDDEN = (
    'jobs.batch "dev" is forbidden: User "dev" cannot get resource "jobs" in API group "batch" '
    'in the namespace "default"'
)


# -- the cluster's objects, as the API server returns them ----------------------------------------


def brokers(api: Cluster, status: Callable[[int], dict[str, Any]], node: str | None = "node-1") -> None:
    for rank in range(DEV.size):
        api.add_pod(broker_pod(rank, status(rank), node))
        api.logs[("default", f"dev-{rank}-abcde")] = f"rank {rank} is up\n"


# -- the states of the README's table -------------------------------------------------------------


def not_deployed(api: Cluster) -> None:
    pass


def no_pod_yet(api: Cluster) -> None:
    api.add_job(job())


def pending(api: Cluster) -> None:
    api.add_job(job())
    brokers(api, lambda _: unschedulable("0/3 nodes are available: 3 Insufficient cpu."), node=None)


def container_creating(api: Cluster) -> None:
    api.add_job(job())
    brokers(api, lambda _: waiting("ContainerCreating", container=BROKER))


def crash_loop(api: Cluster) -> None:
    api.add_job(job())
    back_off = "back-off 40s restarting failed container=flux-broker pod=dev-0-abcde"
    brokers(api, lambda _: waiting("CrashLoopBackOff", back_off, container=BROKER, restarts=3))
    for rank in range(DEV.size):
        api.previous_logs[("default", f"dev-{rank}-abcde")] = f"minicluster[rank {rank}]: broker exited with status 1\n"


READINGS = ["/bin/bash", paths.ENTRYPOINT, "--readings"]


def all_running(api: Cluster) -> None:
    """Rank 0's readings come from a real instance of 4 brokers (tests/flux_instance.py); any other exec
    says what it ran."""
    api.add_job(job())
    brokers(api, lambda _: running(BROKER))

    def in_pod(pod: dict[str, Any], command: list[str]) -> tuple[str, str, int | None]:
        if command == READINGS:
            done = flux_instance.instance(DEV.size).readings()
            return done.stdout, done.stderr, done.returncode
        return f"ran {' '.join(command)} in {pod['metadata']['name']}\n", "", 0

    api.exec_handler = in_pod


def exec_denied(api: Cluster) -> None:
    all_running(api)
    api.fail("GET", "/exec$", 403, 'pods "dev-0-abcde" is forbidden: User "dev" cannot get resource "pods/exec"')


def rank0_silent(api: Cluster) -> None:
    """Rank 0's broker does not answer (stopped, overloaded): its readings never come."""
    all_running(api)
    answers = api.exec_handler
    assert answers is not None

    def hangs(pod: dict[str, Any], command: list[str]) -> tuple[str, str, int | None]:
        if command == READINGS:
            time.sleep(flux_view.READINGS_TIMEOUT + 1)
            return "", "", None
        return answers(pod, command)

    api.exec_handler = hangs


def succeeded(api: Cluster) -> None:
    api.add_job(job("Complete"))
    brokers(api, lambda _: finished(0, BROKER))


def failed(api: Cluster) -> None:
    api.add_job(job("Failed", "BackoffLimitExceeded"))
    brokers(api, lambda rank: finished(1 if rank == 0 else 143, BROKER))


def stopped_pods_gone(api: Cluster) -> None:
    """A Job its scheduling guard stopped: once it failed, Kubernetes deleted its pods."""
    stopped = job("Failed", "DeadlineExceeded")
    stopped["metadata"]["annotations"][STOPPED] = "its pods could not start for 180s (minicluster:scheduleTimeout)"
    api.add_job(stopped)


def deleted_mid_command(api: Cluster) -> None:
    all_running(api)
    api.on_request = lambda number: api.delete_everything() if number == 2 else None


def unreachable(api: Cluster) -> None:
    write_kubeconfig(api.kubeconfig, {"standin": refused_url()})


def rbac_denied(api: Cluster) -> None:
    all_running(api)
    api.fail("GET", "/", 403, FORBIDDEN)


STATES: dict[str, Callable[[Cluster], None]] = {
    "not deployed": not_deployed, "no pod yet": no_pod_yet, "Pending, unschedulable": pending,
    "ContainerCreating": container_creating, "CrashLoopBackOff": crash_loop, "Running": all_running,
    "Running, exec not allowed": exec_denied, "Running, rank 0 does not answer": rank0_silent,
    "Succeeded": succeeded, "Failed": failed, "Failed, its pods gone": stopped_pods_gone,
    "deleted mid-command": deleted_mid_command,
    "API unreachable": unreachable, "RBAC denied": rbac_denied,
}  # fmt: skip
COMMANDS: dict[str, list[str]] = {
    "list": ["list"], "status": ["status"], "logs": ["logs"], "logs --all": ["logs", "--all"],
    "wait": ["wait", "--timeout", "0.2"], "exec": ["exec", "--", "flux", "resource", "list"],
}  # fmt: skip


def readme_table() -> list[tuple[str, str, int, str]]:
    """(state, command, exit code, words) for every cell of docs/operating.md's states table."""
    text = (ROOT / "docs" / "operating.md").read_text()
    rows = text.split("<!-- states table: each cell is a test -->", 1)[1].strip().split("\n\n", 1)[0].splitlines()
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    cells = []
    for row in rows[2:]:
        state, *columns = (cell.strip() for cell in row.strip("|").split("|"))
        for command, cell in zip(header[1:], columns, strict=True):
            match = re.fullmatch(r"`(\d+)` (.+)", cell)
            assert match, f"docs/operating.md states table, {state} x {command}: {cell!r}"
            cells.append((state, command, int(match.group(1)), match.group(2)))
    return cells


CELLS = readme_table()


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit code, and stderr then stdout with white space folded (a table's cells are read as words)."""
    code = cli.main(["--stack", "dev", *args] if args[0] == "--" else [args[0], "--stack", "dev", *args[1:]])
    captured = capsys.readouterr()
    text = " ".join(f"{captured.err}\n{captured.out}".split())
    return code, re.sub(r"[│┃─━┏┓┗┛┡┩└┘┌┐╇╈]", " ", text).replace("  ", " ")


def test_the_readme_table_covers_every_state_and_command() -> None:
    assert {(state, command) for state, command, _, _ in CELLS} == {(s, c) for s in STATES for c in COMMANDS}


@pytest.mark.parametrize(("state", "command", "exit_code", "words"), CELLS, ids=[f"{s} x {c}" for s, c, _, _ in CELLS])
def test_states_table(
    kube_api: Cluster, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest, state: str, command: str,
    exit_code: int, words: str,
) -> None:  # fmt: skip
    if (state, command) == ("Running", "status"):  # rank 0's readings come from real Flux
        request.getfixturevalue("real_flux")
    STATES[state](kube_api)
    code, said = run_cli(COMMANDS[command], capsys)
    assert words in said
    assert code == exit_code, said
    assert "Traceback" not in said
