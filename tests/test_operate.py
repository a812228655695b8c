"""The ops tool (flux_minicluster/ops) with the real `kubernetes` client against the local API stand-in (issues 6, 10).

The states table (command x cluster state -> exit code and words) is read from docs/operating.md
and every cell is run here, so the table and the tool cannot disagree.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.builders.manifests import labels
from flux_minicluster.builders.names import INDEX_LABEL
from flux_minicluster.cluster import flux_view
from flux_minicluster.cluster.waiting import Clock
from flux_minicluster.config import paths
from flux_minicluster.config.stack_file import load, stack_path
from flux_minicluster.ops import cli
from tests import flux_instance
from tests.harness import ROOT
from tests.kube_api import Cluster, finished, refused_url, running, unschedulable, waiting, write_kubeconfig

BROKER = "flux-broker"
DEV, _ = load(stack_path("dev"))  # the real dev stack: 4 brokers, a command
FORBIDDEN = (
    'jobs.batch "dev" is forbidden: User "dev" cannot get resource "jobs" in API group "batch" '
    'in the namespace "default"'
)


# -- the cluster's objects, as the API server returns them ----------------------------------------


def job(condition: str | None = None, reason: str | None = None) -> dict[str, Any]:
    conditions = [{"type": condition, "status": "True", "reason": reason}] if condition else []
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "dev", "namespace": "default"},
        "spec": {"completions": 4, "parallelism": 4, "completionMode": "Indexed",
                 "template": {"spec": {"containers": []}}},
        "status": {"conditions": conditions, "completedIndexes": "0-3" if condition == "Complete" else ""},
    }  # fmt: skip


def broker_pod(rank: int, status: dict[str, Any], node: str | None = "node-1", owner: str = "dev") -> dict[str, Any]:
    pod_labels = {**labels(DEV.model_copy(update={"name": owner}), "broker"), INDEX_LABEL: str(rank), "job-name": owner}
    spec: dict[str, Any] = {"containers": [{"name": BROKER, "image": DEV.image}]}
    if node:
        spec["nodeName"] = node
    metadata = {"name": f"{owner}-{rank}-abcde", "namespace": "default", "labels": pod_labels}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


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
    api.fail("GET", "/exec$", 403, 'pods "dev-0-abcde" is forbidden: User "dev" cannot create resource "pods/exec"')


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
    "Succeeded": succeeded, "Failed": failed, "deleted mid-command": deleted_mid_command,
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


# -- beyond the table -----------------------------------------------------------------------------


def test_a_context_that_does_not_exist_is_named_with_the_ones_that_do(
    kube_api: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["list", "--stack", "dev", "--context", "nope"])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: kubeconfig context 'nope' does not exist in {kube_api.kubeconfig}; its contexts: standin"
    )


def test_no_kubeconfig_outside_a_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert cli.main(["status", "--stack", "dev"]) == 2
    err = capsys.readouterr().err
    assert "no kubeconfig (KUBECONFIG=" in err
    assert "point KUBECONFIG at yours, or make a local cluster with `kind create cluster`" in err


@pytest.mark.parametrize("text", ["garbage: [\n", "- a list\n", "just text\n"])
def test_a_malformed_kubeconfig_is_one_line_and_exit_2(tmp_path: Path, text: str) -> None:
    """As a user meets it: the tool as a process, KUBECONFIG naming a file that is not a kubeconfig."""
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(text)
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    command = Path(sys.executable).parent / "minicluster"  # the console command the venv's install made
    result = subprocess.run([str(command), "status", "--stack", "dev"], capture_output=True, text=True, env=env)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: the kubeconfig {kubeconfig} is not usable: ")
    assert result.stderr.count("\n") == 1  # one line, no traceback


def test_an_unknown_stack_is_a_usage_error(kube_api: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list", "--stack", "nope"]) == 2
    said = capsys.readouterr().err
    assert said.startswith(
        f"error: no stack file {ROOT / 'Pulumi.nope.yaml'} (the stacks here: coscheduling, dev, gpu, "
    )
    assert said.count("\n") == 1  # one line


def test_a_missing_namespace_is_named(kube_api: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    kube_api.namespaces = set()
    assert cli.main(["status", "--stack", "dev"]) == 3
    assert "namespace 'default' does not exist" in capsys.readouterr().err


def test_a_rank_outside_the_cluster(kube_api: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    all_running(kube_api)
    assert cli.main(["exec", "--stack", "dev", "--rank", "9", "--", "hostname"]) == 3
    assert capsys.readouterr().err.strip() == "error: MiniCluster 'dev' has no rank 9 (it has 4: 0-3)"


def test_only_this_miniclusters_broker_pods_count_in_rank_order(kube_api: Cluster, capsys: Any) -> None:
    kube_api.add_job(job())
    for rank in (3, 1, 2, 0):
        kube_api.add_pod(broker_pod(rank, running(BROKER)))
        kube_api.add_pod(broker_pod(rank, running(BROKER), owner="other"))
    keygen = broker_pod(0, finished(0, "keygen"))
    keygen["metadata"].update(name="dev-keygen-x1y2z", labels={**labels(DEV, "keygen")})
    kube_api.add_pod(keygen)
    assert cli.main(["list", "--stack", "dev"]) == 0
    listed = re.findall(r"(\S+-\d-abcde|dev-keygen-\S+)", capsys.readouterr().out)
    assert listed == ["dev-0-abcde", "dev-1-abcde", "dev-2-abcde", "dev-3-abcde"]


def test_a_failed_command_in_exec_exits_1_and_says_its_status(kube_api: Cluster, capsys: Any) -> None:
    all_running(kube_api)
    kube_api.exec_handler = lambda pod, command: ("", "flux-resource: Connection refused\n", 2)
    assert cli.main(["exec", "--stack", "dev", "--rank", "1", "--", "flux", "resource", "list"]) == 1
    err = capsys.readouterr().err
    assert "flux-resource: Connection refused" in err
    assert "the command exited with status 2" in err


def test_exec_keeps_every_double_dash_of_the_command_after_the_separator(kube_api: Cluster) -> None:
    all_running(kube_api)
    ran: list[list[str]] = []

    def record(_pod: Any, command: list[str]) -> tuple[str, str, int]:
        ran.append(command)
        return "", "", 0

    kube_api.exec_handler = record
    argv = shlex.split("exec --stack dev -- flux run -N2 -- echo -- x")  # as a shell passes it
    assert cli.main(argv) == 0
    (command,) = ran
    assert command[-7:] == ["flux", "run", "-N2", "--", "echo", "--", "x"]


def test_exec_on_a_pod_that_loses_its_host_in_between_is_not_a_traceback(kube_api: Cluster, capsys: Any) -> None:
    all_running(kube_api)
    kube_api.on_request = lambda number: kube_api.set_pod("default", "dev-0-abcde", node=None) if number == 3 else None
    assert cli.main(["exec", "--stack", "dev", "--", "hostname"]) == 5
    assert capsys.readouterr().err.strip() == (
        "error: pod dev-0-abcde is not running: pod dev-0-abcde does not have a host assigned; see `status`"
    )


def test_logs_of_an_empty_log_say_so(kube_api: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    all_running(kube_api)
    kube_api.logs[("default", "dev-0-abcde")] = ""
    assert cli.main(["logs", "--stack", "dev"]) == 0
    assert "rank 0's log is empty so far" in capsys.readouterr().err


def test_logs_all_follow_prints_lines_as_the_brokers_write_them(kube_api: Cluster, capsys: Any) -> None:
    all_running(kube_api)

    def brokers_write_then_finish() -> None:
        for step in range(2):
            time.sleep(0.1)
            with kube_api.lock:
                for rank in range(DEV.size):
                    kube_api.logs[("default", f"dev-{rank}-abcde")] += f"rank {rank} step {step}\n"
                kube_api.lock.notify_all()
        for rank in range(DEV.size):
            kube_api.set_pod("default", f"dev-{rank}-abcde", status=finished(0, BROKER))

    threading.Thread(target=brokers_write_then_finish, daemon=True).start()
    assert cli.main(["logs", "--stack", "dev", "--all", "--follow"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == sorted(
        [f"[rank {rank}] rank {rank} is up" for rank in range(4)]
        + [f"[rank {rank}] rank {rank} step {step}" for rank in range(4) for step in range(2)]
    )
    for rank in range(4):  # each rank's lines in the order it wrote them
        mine = [line for line in lines if line.startswith(f"[rank {rank}]")]
        assert mine == [
            f"[rank {rank}] rank {rank} is up",
            f"[rank {rank}] rank {rank} step 0",
            f"[rank {rank}] rank {rank} step 1",
        ]


def test_wait_follows_a_job_to_completion(kube_api: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    all_running(kube_api)

    def complete_soon(number: int) -> None:
        if number == 5:
            kube_api.jobs[("default", "dev")]["status"]["conditions"] = [{"type": "Complete", "status": "True"}]

    kube_api.on_request = complete_soon
    started = time.monotonic()
    assert cli.cmd_wait(cli.Cluster(_client(), DEV), cli.Console(width=200), 30, Clock(poll=0.05)) == 0
    assert time.monotonic() - started < 5
    assert "the job completed" in capsys.readouterr().out


def test_an_api_server_error_is_one_line_with_its_message(kube_api: Cluster, capsys: Any) -> None:
    all_running(kube_api)
    kube_api.fail("GET", "/pods$", 503, "the server is currently unable to handle the request")
    assert cli.main(["list", "--stack", "dev"]) == 6
    assert capsys.readouterr().err.strip() == (
        "error: the Kubernetes API server failed (503: the server is currently unable to handle the request) "
        "while reading MiniCluster 'dev'"
    )


def _client() -> Any:
    from flux_minicluster.cluster import kube

    return kube.api_client(None)


def test_status_says_which_ranks_were_replaced_how_often_and_why(kube_api: Cluster, capsys: Any) -> None:
    all_running(kube_api)
    evicted = broker_pod(0, finished(143, BROKER))
    evicted["metadata"].update(name="dev-0-old11", creationTimestamp="2025-12-31T00:00:00Z")
    disruption = {"reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}
    evicted["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", **disruption}]
    kube_api.add_pod(evicted)
    for name, at in (("dev-2-aaaaa", "2025-12-30T00:00:00Z"), ("dev-2-bbbbb", "2025-12-30T01:00:00Z"),
                     ("dev-2-abcde", "2026-01-01T00:00:00Z")):  # fmt: skip
        kube_api.add_event("default", "dev", "SuccessfulCreate", f"Created pod: {name}", kind="Job", at=at)
    kube_api.add_event("default", "dev-2-aaaaa", "Preempted", "Preempted by default/urgent on node node-1")
    assert cli.main(["status", "--stack", "dev"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "replaced rank 0: 1 time (EvictionByEvictionAPI: Eviction API: evicting)" in said
    assert "replaced rank 2: 2 times (Preempted: Preempted by default/urgent on node node-1; deleted)" in said
    assert "replaced rank 1" not in said


def test_status_without_leave_to_read_events_still_answers(kube_api: Cluster, capsys: Any) -> None:
    all_running(kube_api)
    kube_api.fail("GET", "/events$", 403, 'events is forbidden: User "dev" cannot list resource "events"')
    assert cli.main(["status", "--stack", "dev"]) == 0
    captured = capsys.readouterr()
    assert "pods 4 Running" in " ".join(captured.out.split())
    assert "why pods were replaced is shown only from the pods" in captured.err


def test_exec_whose_connection_ends_before_the_exit_status_says_so(kube_api: Cluster, capsys: Any) -> None:
    all_running(kube_api)
    kube_api.exec_handler = lambda pod, command: ("partial output\n", "", None)
    assert cli.main(["exec", "--stack", "dev", "--", "flux", "resource", "list"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "partial output\n"
    assert "the connection ended before the command's exit status came" in captured.err
    assert "Traceback" not in captured.err


# -- following a resize (issue 11) ----------------------------------------------------------------


def test_status_shows_the_jobs_size_its_bounds_and_each_ranks_state_during_a_resize(
    kube_api: Cluster, capsys: Any
) -> None:
    all_running(kube_api)
    kube_api.jobs[("default", "dev")]["spec"].update(completions=6, parallelism=6)
    for rank in (4, 5):
        kube_api.add_pod(broker_pod(rank, unschedulable("0/3 nodes are available"), node=None))
    assert cli.main(["status", "--stack", "dev"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert (
        f"size 6 (minSize 1, maxSize {DEV.largest_size}); the stack config says 4: a resize is under way, "
        "or run `pulumi up`" in said
    )
    assert "ranks Running 0-3; Pending 4-5" in said


def test_status_marks_the_pods_of_ranks_a_shrink_removes_as_leaving(kube_api: Cluster, capsys: Any) -> None:
    all_running(kube_api)
    kube_api.jobs[("default", "dev")]["spec"].update(completions=3, parallelism=3)
    assert cli.main(["status", "--stack", "dev"]) == 0
    assert "ranks Running 0-2; leaving 3" in " ".join(capsys.readouterr().out.split())


def test_wait_waits_for_the_size_the_stack_asks_for(kube_api: Cluster, capsys: Any) -> None:
    all_running(kube_api)
    grown = DEV.model_copy(update={"size": 6, "max_size": 8, "command": None})

    def resize_soon(number: int) -> None:
        if number == 6:
            kube_api.jobs[("default", "dev")]["spec"].update(completions=6, parallelism=6)
            for rank in (4, 5):
                kube_api.add_pod(broker_pod(rank, running(BROKER)))

    kube_api.on_request = resize_soon
    assert cli.cmd_wait(cli.Cluster(_client(), grown), cli.Console(width=200), 30, Clock(poll=0.05)) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "every broker is up; the instance stays up (scheduled 6/6, running 6/6)" in out
