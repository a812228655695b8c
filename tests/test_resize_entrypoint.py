"""The scripts' part in a resize (issue 11), under bash with a stand-in `flux` that keeps an
instance's drained ranks and running jobs: what `pulumi up` runs in rank 0's container before it
changes the Job (resize.sh FROM TO POLICY TIMEOUT), and what brokers read at start.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.pods import Pods, Run

SHRINK_REASON = "minicluster: shrinking to 4 brokers"


class Instance:
    """The stand-in instance's state file: drained ranks by reason, and jobs."""

    def __init__(self, tmp: Path, drained: dict[str, str] | None = None, jobs: list[dict[str, Any]] | None = None):
        self.path = tmp / "instance.json"
        self.path.write_text(json.dumps({"drained": drained or {}, "jobs": jobs or []}))

    @property
    def drained(self) -> dict[str, str]:
        return json.loads(self.path.read_text())["drained"]  # type: ignore[no-any-return]

    @property
    def jobs(self) -> list[dict[str, Any]]:
        return json.loads(self.path.read_text())["jobs"]  # type: ignore[no-any-return]


def resize(tmp: Path, instance: Instance, *args: str) -> tuple[Run, list[str]]:
    """Run resize.sh on rank 0 of a persistent cluster that may grow to 8; returns the run and rank 0's log."""
    pods = Pods(tmp, command=None, size=6, maxSize=8)
    (tmp / "state-0").mkdir()
    sink = tmp / "rank0.log"
    sink.write_text("")
    run = pods.run(0, *args, script="resize.sh", STANDIN_INSTANCE=str(instance.path), MC_LOG_SINK=str(sink))
    return run, sink.read_text().splitlines()


def said(run: Run) -> list[str]:
    return [line.removeprefix("minicluster[rank 0]: ") for line in run.stderr.splitlines()]


# -- shrinking ------------------------------------------------------------------------------------


def test_a_shrink_drains_the_ranks_that_go_and_goes_ahead_when_no_job_runs_there(tmp_path: Path) -> None:
    instance = Instance(tmp_path, jobs=[{"id": "fA", "ranks": "0-3"}])  # on ranks that stay
    run, _ = resize(tmp_path, instance, "6", "4", "wait", "60")
    assert run.status == 0
    assert instance.drained == {"4": SHRINK_REASON, "5": SHRINK_REASON}
    assert said(run) == [
        "shrinking from 6 to 4 brokers: draining ranks 4-5, so that no new work starts there",
        "no job runs on ranks 4-5",
    ]
    assert run.subcommand("cancel") == []


def test_the_shrink_lines_also_reach_rank0s_log(tmp_path: Path) -> None:
    run, log = resize(tmp_path, Instance(tmp_path), "6", "5", "wait", "60")
    assert log == run.stderr.splitlines()
    assert log[0] == (
        "minicluster[rank 0]: shrinking from 6 to 5 brokers: draining ranks 5, so that no new work starts there"
    )


def test_with_policy_wait_a_shrink_waits_for_the_jobs_on_the_ranks_that_go(tmp_path: Path) -> None:
    instance = Instance(tmp_path, jobs=[{"id": "fB", "ranks": "[3-5]", "polls": 3}, {"id": "fC", "ranks": "1"}])
    run, _ = resize(tmp_path, instance, "6", "4", "wait", "60")
    assert run.status == 0
    assert said(run)[1:] == [
        "waiting up to 60s for the jobs running on ranks 4-5 to finish (shrinkPolicy wait): fB",
        "the jobs on ranks 4-5 have ended: the shrink goes ahead",
    ]
    assert run.subcommand("cancel") == []
    assert run.sleeps  # it paused between looks


def test_with_policy_wait_a_shrink_is_called_off_when_the_jobs_outlast_the_timeout(tmp_path: Path) -> None:
    """Nothing changes: the ranks it drained are undrained; one drained before (by an admin) stays so."""
    instance = Instance(tmp_path, drained={"5": "bad memory"}, jobs=[{"id": "fD", "ranks": "4"}])
    run, log = resize(tmp_path, instance, "6", "4", "wait", "1")
    assert run.status == 3
    assert instance.drained == {"5": "bad memory"}
    assert run.subcommand("resource")[0] == ["resource", "drain", "--update", "4-5", SHRINK_REASON]
    assert said(run)[-1] == ("the shrink to 4 brokers is called off: after 1s these jobs still run on ranks 4-5: fD")
    assert log[-1].endswith("these jobs still run on ranks 4-5: fD")


def test_with_policy_cancel_a_shrink_cancels_the_jobs_there_and_says_which(tmp_path: Path) -> None:
    jobs = [{"id": "fE", "ranks": "2-4"}, {"id": "fF", "ranks": "5"}, {"id": "fG", "ranks": "0"}]
    instance = Instance(tmp_path, jobs=jobs)
    run, _ = resize(tmp_path, instance, "6", "4", "cancel", "60")
    assert run.status == 0
    message = "--message=minicluster: the cluster shrank to 4 brokers"
    assert run.subcommand("cancel") == [["cancel", message, "fE", "fF"]]
    assert said(run)[1:] == [
        "cancelling the jobs running on ranks 4-5 (shrinkPolicy cancel): fE fF",
        "the jobs on ranks 4-5 have ended: the shrink goes ahead",
    ]
    assert [job["id"] for job in instance.jobs if "cancelled" not in job] == ["fG"]


def test_cancelled_jobs_that_do_not_end_call_the_shrink_off(tmp_path: Path) -> None:
    instance = Instance(tmp_path, jobs=[{"id": "fH", "ranks": "5", "ignores_cancel": True}])
    run, _ = resize(tmp_path, instance, "6", "4", "cancel", "1")
    assert run.status == 3
    assert instance.drained == {}


def test_a_failing_drain_stops_the_resize_with_flux_s_own_message(tmp_path: Path) -> None:
    pods_instance = Instance(tmp_path)
    pods_instance.path.write_text("not json")  # the stand-in instance fails: flux resource fails
    run, _ = resize(tmp_path, pods_instance, "6", "4", "wait", "60")
    assert run.status == 1
    assert "error: cannot drain ranks 4-5" in run.stderr


# -- growing --------------------------------------------------------------------------------------


def test_a_grow_undrains_the_ranks_that_come_back_and_only_those(tmp_path: Path) -> None:
    instance = Instance(tmp_path, drained={"4": SHRINK_REASON, "5": SHRINK_REASON, "7": "bad disk", "2": "admin"})
    run, _ = resize(tmp_path, instance, "4", "6", "wait", "60")
    assert run.status == 0
    assert instance.drained == {"7": "bad disk", "2": "admin"}
    assert said(run) == ["growing from 4 to 6 brokers: undraining ranks 4-5, drained when the cluster shrank"]


def test_a_grow_onto_ranks_never_drained_undrains_nothing(tmp_path: Path) -> None:
    instance = Instance(tmp_path)
    run, _ = resize(tmp_path, instance, "6", "8", "wait", "60")
    assert run.status == 0
    assert said(run) == ["growing from 6 to 8 brokers"]
    assert [call for call in run.subcommand("resource") if call[1] == "undrain"] == []


# -- what brokers read at start -------------------------------------------------------------------


def test_brokers_read_the_size_and_quorum_from_the_scale_files_not_their_environment(tmp_path: Path) -> None:
    pods = Pods(tmp_path, mode="interactive", size=4, maxSize=8)
    assert "MC_SIZE" not in pods.env
    (tmp_path / "scale" / "size").write_text("6")  # a resize rewrote the ConfigMap
    (tmp_path / "scale" / "quorum").write_text("6")
    run = pods.run(0)
    assert "-Sbroker.quorum=6" in run.start
    assert "minicluster[rank 0]: rank 0 of 6 in dev-[0-7], mode interactive" in run.stderr


@pytest.mark.parametrize("rank", [6, 7])
def test_a_rank_beyond_the_current_size_says_so_and_starts_its_broker(tmp_path: Path, rank: int) -> None:
    pods = Pods(tmp_path, command=None, size=6, maxSize=8)
    run = pods.run(rank)
    assert f"rank {rank} is beyond the current size 6: the cluster is being resized" in run.stderr
    assert run.subcommand("start")


def test_a_pod_without_a_readable_size_fails_before_starting_flux(tmp_path: Path) -> None:
    pods = Pods(tmp_path)
    (tmp_path / "scale" / "size").write_text("four")
    run = pods.run(1)
    assert run.status == 1
    assert "holds 'four', not a size" in run.stderr
    assert run.subcommand("start") == []


def test_a_job_listing_that_fails_mid_shrink_undrains_what_it_drained_and_stops(tmp_path: Path) -> None:
    instance = Instance(tmp_path, jobs=[{"id": "fJ", "ranks": "4"}])
    pods = Pods(tmp_path, command=None, size=6, maxSize=8)
    (tmp_path / "state-0").mkdir()
    run = pods.run(
        0, "6", "4", "wait", "60", script="resize.sh", STANDIN_INSTANCE=str(instance.path),
        MC_LOG_SINK=str(tmp_path / "log"), STANDIN_EXITS_JOBS="0 1",
    )  # fmt: skip
    assert run.status == 1
    assert "error: cannot list the running jobs" in run.stderr
    assert instance.drained == {}
