"""Every mode of rank 0, the hooks and the task layouts, on real Flux brokers: the Job's pods on this
machine (tests/kubelet), each with its own hostname and network, started from the rendered objects."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.kubelet.pod import wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
Make = Callable[..., Kubelet]


def output_lines(log: str) -> list[str]:
    """What the command printed into rank 0's log: the lines that are neither the broker's nor ours."""
    return [line for line in log.splitlines() if not re.match(r"(<\d>|minicluster\[|ƒ)", line)]


def run_to_completion(cluster: Kubelet) -> list[int]:
    pods = cluster.start_all()
    return [pod.wait(timeout=60) for pod in pods]


# -- submit ------------------------------------------------------------------------------------------


def test_submit_runs_the_command_on_every_broker_and_every_pod_succeeds(minicluster: Make) -> None:
    cluster = minicluster(size=3, tasks=3)
    assert run_to_completion(cluster) == [0, 0, 0]
    assert sorted(output_lines(cluster.pod(0).log)) == ["dev-0", "dev-1", "dev-2"]


def test_rank0_exits_with_the_commands_status_and_the_workers_with_0(minicluster: Make) -> None:
    cluster = minicluster(size=2, command="sh -c 'exit 3'")
    assert run_to_completion(cluster) == [3, 0]
    assert "exiting with status 3" in cluster.pod(0).log


HOSTS = ("dev-0", "dev-1", "dev-2", "dev-3")


@pytest.mark.parametrize(
    ("tasks", "per_host"), [(1, None), (3, None), (4, dict.fromkeys(HOSTS, 1)), (8, dict.fromkeys(HOSTS, 2))]
)
def test_tasks_spread_over_every_node_only_when_there_is_one_per_node(
    minicluster: Make, tasks: int, per_host: dict[str, int] | None
) -> None:
    """Flux refuses more nodes than tasks (-N4 -n3): below the size, the tasks go wherever Flux puts them."""
    if tasks > 4 and (os.cpu_count() or 1) < 2:
        pytest.skip("two tasks per broker need two cores")
    cluster = minicluster(tasks=tasks)
    assert run_to_completion(cluster) == [0, 0, 0, 0]
    hosts = output_lines(cluster.pod(0).log)
    assert len(hosts) == tasks
    if per_host is not None:
        assert {host: hosts.count(host) for host in set(hosts)} == per_host


def test_submit_flags_reach_flux_submit(minicluster: Make) -> None:
    cluster = minicluster(size=2, command="printenv NOTE", submitFlags=["--env=NOTE=from the flags"])
    assert run_to_completion(cluster) == [0, 0]
    assert output_lines(cluster.pod(0).log) == ["from the flags"]


# -- launcher, batch, interactive, persistent --------------------------------------------------------


def test_launcher_mode_runs_the_command_as_the_instances_initial_program(minicluster: Make) -> None:
    cluster = minicluster(size=3, mode="launcher", command="flux run -N3 hostname")
    assert run_to_completion(cluster) == [0, 0, 0]
    assert sorted(output_lines(cluster.pod(0).log)) == ["dev-0", "dev-1", "dev-2"]


def test_batch_runs_each_line_as_a_job_and_keeps_their_output_in_order(minicluster: Make) -> None:
    cluster = minicluster(
        size=2, mode="batch", command="echo one\nflux getattr size\necho three\n", batchOutput="/mnt/results/batch.out",
        volumes={"results": {"path": "/mnt/results", "claimName": "results"}},
    )  # fmt: skip
    assert run_to_completion(cluster) == [0, 0]
    assert output_lines(cluster.pod(0).log) == ["one", "2", "three"]  # the lines run in the batch job's instance
    kept = cluster.claim("results") / "batch.out"
    assert kept.read_text().splitlines() == ["one", "2", "three"]
    assert re.search(r"minicluster\[rank 0\]: batch job ƒ\w+ submitted", cluster.pod(0).log)


def test_a_batch_job_with_a_failing_line_fails_rank0(minicluster: Make) -> None:
    cluster = minicluster(size=2, mode="batch", command="echo one\nfalse\n")
    assert run_to_completion(cluster)[0] != 0


def test_interactive_runs_the_command_then_keeps_the_instance_up(minicluster: Make) -> None:
    cluster = minicluster(size=2, tasks=2, mode="interactive")
    rank0, worker = cluster.start_all()
    wait_until(lambda: "interactive: the instance stays up" in rank0.log, "the command to end", 30)
    assert sorted(output_lines(rank0.log)) == ["dev-0", "dev-1"]
    assert sorted(rank0.flux("run", "-N2", "hostname").split()) == ["dev-0", "dev-1"]  # in the order they come
    assert rank0.running() and worker.running()


def test_persistent_instance_takes_work_until_flux_shutdown(minicluster: Make) -> None:
    cluster = minicluster(command=None)
    pods = cluster.start_all_ready()
    assert sorted(pods[0].flux("run", "-N4", "hostname").split()) == ["dev-0", "dev-1", "dev-2", "dev-3"]
    assert "persistent instance: no initial program" in pods[0].log
    pods[0].flux("shutdown", "--quiet")
    assert [pod.wait(timeout=60) for pod in pods] == [0, 0, 0, 0]


# -- hooks ---------------------------------------------------------------------------------------------


def hooks(trace: str) -> dict[str, Any]:
    return {
        "init": f"echo init >> {trace}",
        "pre": f'echo "pre $(flux R decode --short < /var/lib/minicluster/R)" >> {trace}',
        "post": f'echo "post $MC_EXIT_STATUS" >> {trace}',
    }


def test_hooks_run_in_order_around_the_broker_in_every_pod(minicluster: Make) -> None:
    cluster = minicluster(
        size=2, command="sh -c 'exit 5'", hooks=hooks("/mnt/trace/$HOSTNAME"),
        volumes={"trace": {"path": "/mnt/trace", "claimName": "trace"}},
    )  # fmt: skip
    assert run_to_completion(cluster) == [5, 0]
    traces = cluster.claim("trace")  # R is written before pre: rank 0's gives every rank this machine's cores,
    # a worker's copy names the same ranks with one core each (its broker only parses it)
    assert re.fullmatch(r"init\npre rank\[0-1\]/core\[0(-\d+)?\]\npost 5\n", (traces / "dev-0").read_text())
    assert (traces / "dev-1").read_text() == "init\npre rank[0-1]/core0\npost 0\n"
