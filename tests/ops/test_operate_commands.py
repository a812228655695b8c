"""The ops tool's commands beyond the states table (tests/ops/test_operate.py): contexts and kubeconfigs,
exec's arguments and endings, following logs, waiting, status's details, and following a resize;
against the API stand-in, with the real `kubernetes` client."""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.builders.manifests import labels
from flux_minicluster.cluster.waiting import Clock
from flux_minicluster.ops import cli
from tests.harness import ROOT
from tests.kube_api import Cluster, finished, running, unschedulable
from tests.kube_api.samples import BROKER, DEV, broker_pod, job
from tests.ops.test_operate import all_running

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
        f"error: no stack file {ROOT / 'Pulumi.nope.yaml'} (the stacks here: autoscale, coscheduling, dev, gpu, "
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


def a_replaced_rank0(api: Cluster) -> None:
    """Rank 0's broker crashed and the Job made a new pod (a backoffLimit above 0): the failed pod stays
    listed, the older of the two."""
    all_running(api)
    api.set_pod("default", "dev-0-abcde", status=finished(1, BROKER))
    newer = broker_pod(0, running(BROKER))
    newer["metadata"].update(name="dev-0-fghij", creationTimestamp="2026-01-01T00:05:00Z")
    api.add_pod(newer)
    api.logs[("default", "dev-0-fghij")] = "rank 0 is up again\n"


def test_exec_runs_in_the_ranks_newest_pod_not_the_failed_one_it_replaced(kube_api: Cluster, capsys: Any) -> None:
    a_replaced_rank0(kube_api)
    assert cli.main(["exec", "--stack", "dev", "--", "hostname"]) == 0
    assert capsys.readouterr().out.endswith("in dev-0-fghij\n")


def test_logs_shows_the_ranks_newest_pod(kube_api: Cluster, capsys: Any) -> None:
    a_replaced_rank0(kube_api)
    assert cli.main(["logs", "--stack", "dev"]) == 0
    assert capsys.readouterr().out == "rank 0 is up again\n"


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


def test_exec_with_stdin_on_an_api_server_before_v5_says_the_input_s_end_cannot_be_told(
    kube_api: Cluster, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in speaks v4.channel.k8s.io, as API servers before Kubernetes 1.30 do: `cat` there would
    wait for more input after the pipe's end, so the user is told why the command may not end."""
    all_running(kube_api)
    kube_api.exec_handler = lambda pod, command: ("", "", 0)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"input\n")))
    assert cli.main(["exec", "--stack", "dev", "-i", "--", "cat"]) == 0
    assert capsys.readouterr().err == (
        "this API server speaks v4.channel.k8s.io, which cannot tell the command that its input has ended "
        "(v5.channel.k8s.io, Kubernetes 1.30 and later, can): a command that reads to the end of its input "
        "waits for more; Ctrl-C ends this one\n"
    )


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


def test_logs_follow_goes_on_in_the_pod_that_replaces_the_rank_until_the_job_ends(
    kube_api: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rank 0 evicted and handed over: the follow ended with its pod, saying nothing. Each step here waits
    for the tool to have asked for the log it is about (the stand-in records every request)."""
    all_running(kube_api)
    replacement = broker_pod(0, running(BROKER))
    replacement["metadata"]["name"] = "dev-0-fghij"

    def asked_for_log_of(pod: str) -> None:
        deadline = time.monotonic() + 30
        while not any(path.endswith(f"/pods/{pod}/log") for _, path, _ in list(kube_api.requests)):
            assert time.monotonic() < deadline, f"the tool never asked for {pod}'s log"
            time.sleep(0.02)

    def hand_over_then_end() -> None:
        asked_for_log_of("dev-0-abcde")
        kube_api.set_pod("default", "dev-0-abcde", status=finished(143, BROKER))
        kube_api.logs[("default", "dev-0-fghij")] = "rank 0 is up again\n"
        kube_api.add_pod(replacement)
        asked_for_log_of("dev-0-fghij")
        kube_api.jobs[("default", "dev")]["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
        kube_api.set_pod("default", "dev-0-fghij", status=finished(0, BROKER))

    threading.Thread(target=hand_over_then_end, daemon=True).start()
    assert cli.main(["logs", "--stack", "dev", "--follow"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "rank 0 is up\nrank 0 is up again\n"
    assert "rank 0's pod dev-0-abcde ended; following its replacement, dev-0-fghij" in captured.err
    assert captured.err.endswith("rank 0's pod dev-0-fghij ended, and the Job has completed\n")


def test_wait_follows_a_job_to_completion(kube_api: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    all_running(kube_api)

    def complete_soon(number: int) -> None:
        if number == 5:
            kube_api.jobs[("default", "dev")]["status"]["conditions"] = [{"type": "Complete", "status": "True"}]

    kube_api.on_request = complete_soon
    assert cli.cmd_wait(cli.Cluster(_client(), DEV), cli.Console(width=200), 30, Clock(poll=0.05)) == 0
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


def test_a_minicluster_not_deployed_is_told_with_the_command_for_its_own_stack(kube_api: Cluster, capsys: Any) -> None:
    """Found on the real engines: a Job deleted outside Pulumi stays in the stack's state, so a plain
    `pulumi up` changes nothing; its --refresh sees the Job gone and creates it again."""
    assert cli.main(["status", "--stack", "interactive"]) == 3
    assert capsys.readouterr().err.strip() == (
        "error: MiniCluster 'interactive' is not deployed in namespace 'default': run `pulumi up --stack "
        "interactive` (`pulumi up --refresh` if its Job was deleted outside Pulumi, which `pulumi up` alone does "
        "not see)"
    )


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


# -- an autoscaled cluster (issue 29) -------------------------------------------------------------


def test_status_of_an_autoscaled_cluster_shows_its_size_and_the_autoscalers_last_change(
    kube_api: Cluster, capsys: Any
) -> None:
    kube_api.add_job({**job(), "metadata": {"name": "autoscale", "namespace": "default", "uid": "autoscale-uid"}})
    for rank in range(4):
        kube_api.add_pod(broker_pod(rank, running(BROKER), owner="autoscale"))
    kube_api.add_event("default", "autoscale", "Grew", "grew from 1 to 4 brokers: 3 queued jobs need 3 nodes, 0 free",
                       kind="Job", at="2026-01-01T00:00:00Z")  # fmt: skip
    kube_api.add_event("default", "autoscale-0-abcde", "Pulled", "image pulled", at="2026-01-01T00:01:00Z")
    assert cli.main(["status", "--stack", "autoscale"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "size 4 (minSize 1, maxSize 4); autoscaled, from 1" in said
    assert "autoscaler grew from 1 to 4 brokers: 3 queued jobs need 3 nodes, 0 free (" in said
