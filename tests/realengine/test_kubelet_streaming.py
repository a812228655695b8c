"""Logs and exec through the real API server: `pods/log` and `pods/exec` reach the test kubelet's
streaming server (tests/kubelet/streaming, Kubernetes' own remotecommand server) at its Node's
address, as they reach a kubelet; what the ops tool and the providers do with them works as on a
cluster."""

from __future__ import annotations

import io
import secrets
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from flux_minicluster.builders.names import BROKER_CONTAINER
from flux_minicluster.cluster.pod_exec import run_in_pod, stream_in_pod
from flux_minicluster.ops import cli, logs
from tests.kubelet.pod import wait_until
from tests.realengine.on_node import OnNode


@pytest.fixture
def cluster(on_node: Callable[..., OnNode]) -> OnNode:
    cluster = on_node(size=2, command=None)
    wait_until(lambda: cluster.running(2), "both pods to run and be ready", 60, poll=0.2)
    return cluster


def test_a_pods_log_is_its_flux_containers_output(cluster: OnNode, admin: client.ApiClient) -> None:
    said = client.CoreV1Api(admin).read_namespaced_pod_log(
        cluster.rank0.name, cluster.namespace, container=BROKER_CONTAINER
    )
    assert said and said == cluster.rank0.log


def test_a_command_run_over_the_exec_api_runs_in_the_container_with_its_output_and_status(
    cluster: OnNode, admin: client.ApiClient
) -> None:
    stdout, stderr, code = run_in_pod(admin, cluster.namespace, cluster.rank0.name, BROKER_CONTAINER,
                                      ["sh", "-c", "hostname; echo to-stderr >&2; exit 3"], timeout=30)  # fmt: skip
    assert (stdout, stderr, code) == ("dev-0\n", "to-stderr\n", 3)


@pytest.mark.realflux
def test_minicluster_exec_runs_flux_in_rank_0_and_logs_shows_its_log(
    cluster: OnNode, minicluster_ops: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    ops = minicluster_ops(cluster)
    assert cli.cmd_exec(ops, 0, ["flux", "getattr", "size"]) == 0
    assert capsys.readouterr().out == "2\n"
    assert cli.cmd_exec(ops, 1, ["flux", "getattr", "rank"]) == 0
    assert capsys.readouterr().out == "1\n"


@pytest.mark.realflux
def test_minicluster_status_shows_flux_s_own_view_read_over_exec(
    cluster: OnNode, minicluster_ops: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    ops = minicluster_ops(cluster)
    assert cli.cmd_status(ops, cli.Console(width=200)) == 0
    said = capsys.readouterr().out
    assert "not available" not in said
    view = ops.flux_view(ops.pod_of_rank(0))  # rank 0's readings, over the exec API
    assert ("flux nodes", "2 up, 0 down, 0 drained") in view
    assert all(key in said for key, _ in view)


def test_minicluster_logs_prints_rank_0s_log_as_the_kubelet_wrote_it(
    cluster: OnNode, minicluster_ops: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    ops = minicluster_ops(cluster)
    written = cluster.rank0.log
    assert logs.cmd_logs(ops, 0, follow=False) == 0
    assert capsys.readouterr().out.startswith(written)


@pytest.mark.parametrize("follow", [False, True])
def test_minicluster_logs_all_follows_every_rank_to_its_end(
    on_node: Callable[..., OnNode], minicluster_ops: Callable[..., Any],
    capsys: pytest.CaptureFixture[str], follow: bool,
) -> None:  # fmt: skip
    one_shot = on_node(size=2, command="hostname")
    ops = minicluster_ops(one_shot)
    if not follow:
        wait_until(lambda: one_shot.condition("Complete") == "True", "the Job to complete", 60, poll=0.3)
    else:  # while they run, or as soon as they have
        started = lambda: [pod.status.phase for pod in one_shot.pods()] in (["Running"] * 2, ["Succeeded"] * 2)  # noqa: E731
        wait_until(started, "both pods to start", 60, poll=0.05)
    assert logs.cmd_logs_all(ops, follow=follow) == 0  # following, it returns once both pods have ended
    printed = capsys.readouterr().out.splitlines()
    for rank in (0, 1):
        mine = [line.removeprefix(f"[rank {rank}] ") for line in printed if line.startswith(f"[rank {rank}] ")]
        assert mine == one_shot.kubelet.pod(rank).log.splitlines()


def test_a_streamed_commands_output_comes_while_it_runs(cluster: OnNode, admin: client.ApiClient) -> None:
    """The command prints, then waits for a file that the test makes only once that print has come: the
    output must be passed on while the command runs (a long `flux run` under `minicluster exec`). It
    gives up after a minute, so output held until the end fails the test instead of hanging it."""
    go = f"/tmp/go-{secrets.token_hex(4)}"
    script = f"echo first; for i in $(seq 600); do [ -e {go} ] && break; sleep 0.1; done; [ -e {go} ] && echo second"
    pod = cluster.rank0.name
    seen: list[bytes] = []

    class Sink(io.BytesIO):
        def write(self, data: Any) -> int:
            if not seen:  # the first output: let the command go on
                seen.append(data)
                run_in_pod(admin, cluster.namespace, pod, BROKER_CONTAINER, ["touch", go], timeout=30)
            return super().write(data)

    out, err = Sink(), io.BytesIO()
    code = stream_in_pod(admin, cluster.namespace, pod, BROKER_CONTAINER, ["sh", "-c", script], out, err)
    assert (seen, out.getvalue(), code) == ([b"first\n"], b"first\nsecond\n", 0), err.getvalue()


def test_minicluster_exec_sends_its_input_to_the_command_byte_for_byte_and_then_its_end(
    cluster: OnNode, minicluster_ops: Callable[..., Any], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """`minicluster exec -i -- cat` with half a megabyte of every byte value: `cat` ends only when told its
    input has ended, and what it prints is the input as it was, over many frames."""
    sent = bytes(range(256)) * 2048
    assert cli.cmd_exec(minicluster_ops(cluster), 0, ["cat"], stdin=io.BytesIO(sent)) == 0
    captured = capsysbinary.readouterr()
    assert captured.out == sent, captured.err
