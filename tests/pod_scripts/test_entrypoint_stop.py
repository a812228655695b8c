"""Stopping and losing pods, and rank 0's instance on the state volume: the real entrypoint under bash,
with SIGTERM sent as the kubelet sends it (issue 13)."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

from flux_minicluster.config import paths
from tests.pods import BLOCK, Pods, Run, starts, stop, wait_for

# -- stopping, and losing pods (issue 13) ---------------------------------------------------------


def test_sigterm_reaches_the_broker_at_once_and_a_worker_exits_143_after_its_post_hook(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    pods = Pods(tmp_path, hooks={"post": f'echo "post $MC_EXIT_STATUS" >> {trace}'})
    run = stop(pods.start(1, **BLOCK))
    assert run.sleeps == []  # at once: nothing waits on a clock
    broker = next(call["pid"] for call in run.calls if call.get("argv", [])[:1] == ["start"])
    assert [call["pid"] for call in run.calls if call.get("signal") == "TERM"] == [broker]  # the broker was told
    assert run.status == 143  # not 0: a Job reruns the index of a pod that was told to stop
    assert trace.read_text() == "post 143\n"
    assert "told to stop (SIGTERM): stopping the broker" in run.stderr


def test_a_broker_told_to_stop_is_not_restarted_by_the_retry_loop(tmp_path: Path) -> None:
    run = stop(Pods(tmp_path).start(2, **BLOCK, STANDIN_TERM_EXIT="1"))
    assert len(run.subcommand("start")) == 1
    assert run.status == 143
    assert "try 2/" not in run.stderr


def test_a_worker_marked_to_rejoin_starts_its_broker_again_instead_of_completing(tmp_path: Path) -> None:
    down = tmp_path / "instance-down"
    process, log = started = Pods(tmp_path).start(1, **BLOCK, STANDIN_START_UNTIL=str(down))
    wait_for(lambda: starts(log) == 1, "the broker to start")
    (tmp_path / "state-1" / "rejoin").touch()  # rank 0 marked it, then shut the instance down
    down.touch()
    wait_for(lambda: starts(log) == 2, "the broker to start again")
    assert process.poll() is None
    run = stop(started)
    assert "went away: rejoining when its replacement is up" in run.stderr
    assert not (tmp_path / "state-1" / "rejoin").exists()
    assert run.status == 143


def test_a_worker_marked_to_rejoin_keeps_trying_beyond_its_budget_while_the_replacement_may_still_come(
    tmp_path: Path,
) -> None:
    """The replacement comes after the Job controller's back-off, which grows with each lost pod."""

    def pods(tmp: Path) -> Pods:  # the mark: the pre hook's, before the first start
        return Pods(tmp, command=None, workerRetries=2, hooks={"pre": f"touch {tmp / 'state-1' / 'rejoin'}"})

    marked_then_alone = {"STANDIN_EXITS_START": "0 1 1 1 1 0"}
    within = pods(tmp_path).run(1, **marked_then_alone)
    assert (within.status, len(within.subcommand("start"))) == (0, 6)
    assert within.sleeps == ["sleep 1", "sleep 2", "sleep 4", "sleep 8"]
    assert "giving up" not in within.stderr
    (tmp_path / "past").mkdir()
    past = pods(tmp_path / "past").run(1, MC_REJOIN_WAIT="0", **marked_then_alone)
    assert (past.status, len(past.subcommand("start"))) == (1, 3)  # the marked one, then the budget of two
    assert "giving up after 2 tries" in past.stderr


def test_a_worker_completes_when_the_instance_shuts_down_for_good(tmp_path: Path) -> None:
    down = tmp_path / "instance-down"
    _, log = started = Pods(tmp_path).start(1, **BLOCK, STANDIN_START_UNTIL=str(down))
    wait_for(lambda: starts(log) == 1, "the broker to start")
    down.touch()  # rank 0's command finished, or `flux shutdown`: no mark
    run = Pods.wait(started)
    assert (run.status, len(run.subcommand("start"))) == (0, 1)
    assert "the instance shut down" in run.stderr


def test_a_mark_to_rejoin_is_for_the_broker_that_ends_however_it_ends(tmp_path: Path) -> None:
    """A rank 0 killed in its hand-over marked the worker and never stopped it: its broker lost rank 0
    (a status not 0) and rejoined the replacement, whose instance then shut down for good."""
    down = tmp_path / "instance-down"
    process, log = started = Pods(tmp_path, command=None).start(
        1, **BLOCK, STANDIN_START_UNTIL=str(down), STANDIN_START_READY_CALLS="1"
    )
    wait_for(lambda: starts(log) == 1, "the broker to start")
    (tmp_path / "state-1" / "rejoin").touch()  # rank 0's hand-over marked it, and was killed
    os.kill(int((tmp_path / "state-1" / "broker.pid").read_text()), signal.SIGKILL)  # lost its parent
    wait_for(lambda: starts(log) == 2, "the broker to rejoin")
    down.touch()
    wait_for(lambda: process.poll() is not None or starts(log) > 2, "the worker to complete or start again")
    run = Pods.wait(started) if process.poll() is not None else stop(started)
    assert (run.status, len(run.subcommand("start"))) == (0, 2)
    assert "the instance shut down" in run.stderr


def test_sigterm_to_rank0_of_a_persistent_cluster_makes_no_worker_exit_0(tmp_path: Path) -> None:
    pods = Pods(tmp_path, command=None)
    downs = [tmp_path / f"down-{rank}" for rank in (1, 2, 3)]
    workers = {rank: pods.start(rank, **BLOCK, STANDIN_START_UNTIL=str(downs[rank - 1])) for rank in (1, 2, 3)}
    for _, log in workers.values():
        wait_for(lambda log=log: starts(log) == 1, "the workers' brokers")
    rank0 = pods.start(0, **BLOCK, STANDIN_EXEC_ON=" ".join(str(tmp_path / f"state-{r}") for r in (1, 2, 3)),
                       STANDIN_ON_TERM_TOUCH=" ".join(map(str, downs)))  # fmt: skip
    run0 = stop(rank0)
    assert (run0.status, run0.sleeps) == (143, [])  # at once: nothing waits on a clock
    for process, log in workers.values():  # each rejoins: its broker starts again, waiting for rank 0
        wait_for(lambda log=log: starts(log) == 2, "the workers to rejoin")
        assert process.poll() is None
    for started in workers.values():
        run = stop(started)
        assert run.status == 143


# -- the state volume: rank 0 comes back with its queue --------------------------------------------


def test_rank0_keeps_the_instance_state_on_the_state_volume_and_workers_do_not(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    pods = Pods(tmp_path, command=None)
    assert f"-Sstatedir={volume}/dev" in pods.run(0, MC_STATE_VOLUME=str(volume)).start
    assert (volume / "dev").is_dir()  # made before the broker starts, so the broker never removes it
    assert f"-Sstatedir={tmp_path}/state-1/content" in pods.run(1, MC_STATE_VOLUME=str(volume)).start


def saved_instance(tmp_path: Path, content: str = "saved") -> Path:
    """An instance saved on the state volume (MC_STATE_VOLUME=tmp_path/volume): its database holds `content`."""
    saved = tmp_path / "volume" / "dev"
    saved.mkdir(parents=True)
    (saved / "content.sqlite").write_text(content)
    return saved


def test_a_saved_instance_is_restarted_from_the_state_volume(tmp_path: Path) -> None:
    saved = saved_instance(tmp_path)
    run = Pods(tmp_path, command=None).run(0, MC_STATE_VOLUME=str(tmp_path / "volume"))
    assert f"restarting the instance saved in {saved}: its queue and job history come back" in run.stderr
    assert len(run.subcommand("start")) == 1
    assert (saved / "content.sqlite").read_text() == "saved"


def modprobe_paths(run: Run) -> list[str | None]:
    """Each broker start's FLUX_MODPROBE_PATH_APPEND (None: not set)."""
    starts = [call for call in run.calls if call.get("argv", [])[:1] == ["start"]]
    return [call["env"].get("FLUX_MODPROBE_PATH_APPEND") for call in starts]


def test_a_saved_instance_restarts_with_rank0s_own_rc1_step(tmp_path: Path) -> None:
    saved_instance(tmp_path)
    pods = Pods(tmp_path, command=None)
    run = pods.run(0, MC_STATE_VOLUME=str(tmp_path / "volume"))
    folder = tmp_path / "state-0" / "modprobe"
    assert modprobe_paths(run) == [str(folder)]
    step = folder / "rc1.d" / paths.RESTART_RC1  # where Flux's modprobe looks for rc1 tasks
    assert step.read_text() == (pods.run_dir / paths.RESTART_RC1).read_text()


def test_the_rc1_step_comes_after_the_images_own_modprobe_path(tmp_path: Path) -> None:
    saved_instance(tmp_path)
    run = Pods(tmp_path, command=None).run(
        0, MC_STATE_VOLUME=str(tmp_path / "volume"), FLUX_MODPROBE_PATH_APPEND="/opt/site/modprobe"
    )
    assert modprobe_paths(run) == [f"/opt/site/modprobe:{tmp_path}/state-0/modprobe"]


def test_a_new_instance_that_ran_and_then_crashed_restarts_with_the_rc1_step(tmp_path: Path) -> None:
    """Its first broker made the saved instance (Flux's content.sqlite in the statedir); the broker that
    starts again from it in the same pod is a restart like any other."""
    (tmp_path / "volume" / "dev").mkdir(parents=True)
    run = Pods(tmp_path, command=None).run(
        0, MC_STATE_VOLUME=str(tmp_path / "volume"), STANDIN_START_READY="1", STANDIN_EXITS_START="137 0",
        STANDIN_START_WRITES=str(tmp_path / "volume" / "dev" / "content.sqlite"),
    )  # fmt: skip
    assert modprobe_paths(run) == [None, str(tmp_path / "state-0" / "modprobe")]


def test_a_new_instance_starts_without_the_rc1_step(tmp_path: Path) -> None:
    run = Pods(tmp_path, command=None).run(0, MC_STATE_VOLUME=str(tmp_path / "volume"))
    assert modprobe_paths(run) == [None]
    assert not (tmp_path / "state-0" / "modprobe").exists()


def test_a_saved_instance_takes_jobs_once_rank0_alone_is_up(tmp_path: Path) -> None:
    """Its workers were online before; each rejoins as its broker comes back."""
    saved_instance(tmp_path)
    run = Pods(tmp_path, command=None, maxSize=10).run(0, MC_STATE_VOLUME=str(tmp_path / "volume"))
    quorums = [option for option in run.start if option.startswith("-Sbroker.quorum")]
    assert quorums == ["-Sbroker.quorum=1"]


def test_a_new_instance_on_the_state_volume_waits_for_its_quorum(tmp_path: Path) -> None:
    run = Pods(tmp_path, command=None, maxSize=10).run(0, MC_STATE_VOLUME=str(tmp_path / "volume"))
    assert [option for option in run.start if option.startswith("-Sbroker.quorum")] == ["-Sbroker.quorum=4"]


def test_the_new_instance_after_a_saved_state_kept_aside_waits_for_its_quorum(tmp_path: Path) -> None:
    saved_instance(tmp_path, "torn")
    pods = Pods(tmp_path, command=None, maxSize=10)
    run = pods.run(0, MC_STATE_VOLUME=str(tmp_path / "volume"), STANDIN_EXITS_START="1 1 1 0")
    quorums = [[o for o in argv if o.startswith("-Sbroker.quorum")] for argv in run.subcommand("start")]
    assert quorums == [["-Sbroker.quorum=1"]] * 3 + [["-Sbroker.quorum=4"]]
    folder = str(tmp_path / "state-0" / "modprobe")
    assert modprobe_paths(run) == [folder] * 3 + [None]  # the step is for a restart, not a new instance


def test_a_saved_state_the_broker_cannot_start_from_is_kept_aside_for_recovery(tmp_path: Path) -> None:
    saved = saved_instance(tmp_path, "torn")
    run = Pods(tmp_path, command=None).run(0, MC_STATE_VOLUME=str(tmp_path / "volume"), STANDIN_EXITS_START="1 1 1 0")
    (kept,) = (tmp_path / "volume").glob("dev.failed-*")
    assert (kept / "content.sqlite").read_text() == "torn"
    assert f"with 'flux start --recovery={kept}'" in run.stderr
    assert run.sleeps == ["sleep 5", "sleep 5"]  # three tries, five seconds apart
    assert (len(run.subcommand("start")), run.status) == (4, 0)
    assert not (saved / "content.sqlite").exists()  # the new instance starts empty


def test_a_saved_instance_that_ran_and_then_failed_restarts_in_the_pod_from_its_state(tmp_path: Path) -> None:
    """A crash after the start (here: any failure, with no grace) restarts the broker at once in the same
    pod, instead of failing the pod into the Job's back-off; the state is kept, not thrown away."""
    saved = saved_instance(tmp_path)
    run = Pods(tmp_path, command=None).run(
        0, MC_STATE_VOLUME=str(tmp_path / "volume"), STANDIN_EXITS_START="137 137 0", MC_RESTORE_GRACE="0"
    )
    assert (len(run.subcommand("start")), run.status) == (3, 0)
    assert run.sleeps == []  # at once
    said = "the broker exited with status 137 after 0s in the instance: restarting it from its last checkpoint"
    assert f"{said} in {saved}" in run.stderr
    assert list((tmp_path / "volume").glob("dev.failed-*")) == []
    assert (saved / "content.sqlite").read_text() == "saved"


def test_a_saved_instance_that_keeps_crashing_once_up_restarts_after_growing_pauses(tmp_path: Path) -> None:
    """Up each time (its readiness probe had passed), then crashed within the grace of its start: the
    first restart is at once, the next ones back off; its state is never taken for one it cannot start from."""
    saved = saved_instance(tmp_path)
    run = Pods(tmp_path, command=None).run(
        0, MC_STATE_VOLUME=str(saved.parent), STANDIN_START_READY="1", STANDIN_EXITS_START="137 137 137 137 0"
    )
    assert (len(run.subcommand("start")), run.status) == (5, 0)
    assert run.sleeps == ["sleep 1", "sleep 2", "sleep 4"]
    assert "did not start" not in run.stderr
    assert list((tmp_path / "volume").glob("dev.failed-*")) == []


def test_rank0_marks_the_workers_even_in_an_image_without_timeout(tmp_path: Path) -> None:
    pods = Pods(tmp_path, command=None)
    worker = tmp_path / "state-1"
    worker.mkdir()
    no_timeout = tmp_path / "no-timeout-bin"
    no_timeout.mkdir()
    for tool in ("bash", "mkdir", "install", "rm", "sleep", "touch", "kill"):
        found = shutil.which(tool)
        if found and not (no_timeout / tool).exists():
            (no_timeout / tool).symlink_to(found)
    path = f"{pods.bin}:{no_timeout}"
    run = stop(pods.start(0, **BLOCK, STANDIN_EXEC_ON=str(worker), PATH=path))
    assert (worker / "rejoin").exists()
    assert run.status == 143
