"""A replaced rank 0 restarts the same instance from the state volume, and loses no queued job (issue 18).

The real entrypoint under bash, with the stand-in broker of tests/standins/saved_instance.py, which
keeps its instance in the statedir and behaves as flux-core 0.88 does there (see that file).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from flux_minicluster.builders import manifests
from flux_minicluster.config import lifecycle
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.conftest import config
from tests.pods import Pods, SavedInstance, instance_up, starts, stop, wait_for

NOTE = lifecycle.HAND_OVER_NOTE


def test_the_hand_over_stops_scheduling_before_it_cancels_so_no_queued_job_starts_and_dies(tmp_path: Path) -> None:
    cluster = SavedInstance(tmp_path)
    run, _ = stop(cluster.busy(), saved=True)
    assert run.status == 143
    assert cluster.jobs() == {"f1": ("INACTIVE", NOTE), "f2": ("INACTIVE", NOTE), "f3": ("SCHED", ""),
                              "f4": ("SCHED", "")}  # fmt: skip
    assert cluster.state()["queue"] == {"started": False, "reason": NOTE}  # saved with the instance
    assert (cluster.saved / lifecycle.STOPPED_QUEUES_FILE).read_text() == "\n"  # the default queue
    assert "stopping scheduling, so that no queued job starts on the nodes the cancel frees" in run.stderr


def test_the_replacement_starts_scheduling_again_and_every_waiting_job_runs(tmp_path: Path) -> None:
    cluster = SavedInstance(tmp_path)
    stop(cluster.busy(), saved=True)
    replacement = cluster.start_rank0()
    wait_for(lambda: cluster.state()["queue"]["started"], "scheduling to start again")
    assert cluster.jobs() == {"f1": ("INACTIVE", NOTE), "f2": ("INACTIVE", NOTE), "f3": ("RUN", ""),
                              "f4": ("RUN", "")}  # fmt: skip
    wait_for(lambda: not (cluster.saved / lifecycle.STOPPED_QUEUES_FILE).exists(), "the note to be removed")
    run, _ = stop(replacement, saved=True)
    assert f"restarting the instance saved in {cluster.saved}: its queue and job history come back" in run.stderr
    assert "scheduling started again: the previous rank 0 had stopped it when its pod went away" in run.stderr
    assert list(cluster.volume.glob("dev.failed-*")) == []


def test_a_queue_a_user_stopped_stays_stopped_across_a_replacement(tmp_path: Path) -> None:
    cluster = SavedInstance(tmp_path)
    started = cluster.busy()
    cluster.flux("queue", "stop", "--quiet", "--message=maintenance")
    run, _ = stop(started, saved=True)
    assert "scheduling was stopped already (flux queue stop): it stays stopped" in run.stderr
    assert not (cluster.saved / lifecycle.STOPPED_QUEUES_FILE).exists()
    replacement = cluster.start_rank0()
    wait_for(lambda: instance_up(replacement[1]), "the replacement's instance")
    assert cluster.flux("queue", "status").splitlines()[-1] == "Scheduling is stopped: maintenance"
    assert [state for state, _ in cluster.jobs().values()] == ["INACTIVE", "INACTIVE", "SCHED", "SCHED"]
    run, _ = stop(replacement, saved=True)
    assert "scheduling started again" not in run.stderr


def test_a_replacement_waits_for_the_old_broker_that_is_still_stopping_and_discards_nothing(tmp_path: Path) -> None:
    cluster = SavedInstance(tmp_path)
    old = cluster.busy(STANDIN_STOP_SECONDS="1.5")
    old_process, old_log = old
    old_process.send_signal(signal.SIGTERM)
    wait_for(lambda: any(call.get("signal") == "TERM" for call in json_lines(old_log)), "the old broker to stop")
    replacement = cluster.start_rank0()
    assert Pods.wait(old).status == 143
    wait_for(lambda: instance_up(replacement[1]), "the replacement's instance")
    wait_for(lambda: cluster.state()["queue"]["started"], "scheduling to start again")
    run, _ = stop(replacement, saved=True)
    assert f"waiting up to {lifecycle.STATE_LOCK_WAIT}s for the broker that still holds {cluster.saved}" in run.stderr
    assert "the saved instance is free" in run.stderr
    assert "database is locked" not in run.stderr  # the replacement never started a broker beside the old one
    assert [state for state, _ in cluster.jobs().values()] == ["INACTIVE", "INACTIVE", "INACTIVE", "INACTIVE"]
    assert list(cluster.volume.glob("dev.failed-*")) == []


def test_a_replacement_gives_up_when_the_saved_instance_stays_held_and_touches_nothing(tmp_path: Path) -> None:
    cluster = SavedInstance(tmp_path)
    stop(cluster.busy(), saved=True)
    before = (cluster.saved / "content.sqlite").read_text()
    with open(f"{cluster.saved}.lock", "a") as lock:  # a broker this test stands for holds it
        fcntl.flock(lock, fcntl.LOCK_EX)
        run = Pods.wait(cluster.start_rank0(MC_STATE_LOCK_WAIT="1"))
    assert run.status == 1
    assert f"another broker still holds {cluster.saved} after 1s: not starting a second one on it" in run.stderr
    assert starts_in(run.calls) == 0
    assert (cluster.saved / "content.sqlite").read_text() == before
    assert list(cluster.volume.glob("dev.failed-*")) == []


def test_one_failed_start_from_the_saved_state_does_not_throw_it_away(tmp_path: Path) -> None:
    cluster = SavedInstance(tmp_path)
    stop(cluster.busy(), saved=True)
    replacement = cluster.start_rank0(STANDIN_FAIL_STARTS="1")
    wait_for(lambda: instance_up(replacement[1]), "the second start")
    wait_for(lambda: cluster.state()["queue"]["started"], "scheduling to start again")
    assert [state for state, _ in cluster.jobs().values()] == ["INACTIVE", "INACTIVE", "RUN", "RUN"]
    run, _ = stop(replacement, saved=True)
    assert "the saved instance did not start (status 1, try 1/3); again in 5s" in run.stderr
    assert list(cluster.volume.glob("dev.failed-*")) == []


def test_a_killed_rank0_comes_back_from_its_last_checkpoint(tmp_path: Path) -> None:
    """No hand-over: the running jobs end with an exception at the restart (Flux cannot reattach to
    them), the waiting ones stay queued and run, and the history stays."""
    cluster = SavedInstance(tmp_path)
    process, _ = cluster.busy()
    broker = int((cluster.pod_dir / "broker.pid").read_text())
    for pid in (process.pid, broker):  # the container dies: every process at once, no trap runs
        os.kill(pid, signal.SIGKILL)
    process.wait()
    replacement = cluster.start_rank0()
    wait_for(lambda: instance_up(replacement[1]), "the replacement's instance")
    run, _ = stop(replacement, saved=True)
    assert [state for state, _ in cluster.jobs().values()] == ["INACTIVE", "INACTIVE", "INACTIVE", "INACTIVE"]
    notes = [note for _, note in cluster.jobs().values()]
    assert notes[:2] == ["job-manager: the instance restarted"] * 2  # then f3, f4 ran and the stop cancelled them
    assert "waiting up to" not in run.stderr  # a killed broker holds nothing
    assert list(cluster.volume.glob("dev.failed-*")) == []


def test_a_worker_that_had_joined_rejoins_with_a_fresh_budget_when_rank0_is_killed(tmp_path: Path) -> None:
    pods = Pods(tmp_path, command=None, workerRetries=1)  # without the fresh budget: no second start
    worker, log = pods.start(1, STANDIN_START_BLOCK="1", STANDIN_START_UNTIL=str(tmp_path / "never"),
                             STANDIN_EXITS_START="0")  # fmt: skip
    wait_for(lambda: starts(log) == 1, "the worker's broker")
    (tmp_path / "state-1" / "ready").write_text((tmp_path / "state-1" / "broker.pid").read_text())  # the probe said so
    broker = int((tmp_path / "state-1" / "broker.pid").read_text())
    os.kill(broker, signal.SIGKILL)  # what losing its parent does to a broker: it exits non-zero
    wait_for(lambda: starts(log) == 2, "the broker to start again")
    run, _ = stop((worker, log))
    assert "after it had joined the instance: rejoining rank 0's replacement" in run.stderr
    assert "giving up" not in run.stderr


def json_lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().split("\n")[:-1]] if log.exists() else []


def starts_in(calls: list[dict[str, Any]]) -> int:
    return sum(1 for call in calls if call.get("argv", [""])[:1] == ["start"])


def test_the_readiness_probe_asks_the_entrypoint_every_few_seconds() -> None:
    container = manifests.job(load_spec_of(command=None), **NAMES)["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"] == {
        "exec": {"command": ["/bin/bash", "/etc/minicluster/run/entrypoint.sh", "--ready"]},
        "periodSeconds": 2,
        "timeoutSeconds": 10,
    }


# -- one broker per saved instance: Kubernetes' part --------------------------------------------------


def test_a_lost_pod_is_replaced_only_once_it_is_gone() -> None:
    for restart_policy in ("Never", "OnFailure"):  # OnFailure has no podFailurePolicy, so no such default
        job = manifests.job(load_spec_of(pod={"restartPolicy": restart_policy}), **NAMES)
        assert job["spec"]["podReplacementPolicy"] == "Failed"


# -- the broker runs as a foreground command would ------------------------------------------------


def test_the_background_broker_does_not_inherit_the_signals_bash_ignores_in_background_commands(
    tmp_path: Path,
) -> None:
    foreground = subprocess.run(["bash", "-c", "grep SigIgn /proc/self/status"], capture_output=True, text=True)
    (start,) = [call for call in Pods(tmp_path).run(1).calls if call["argv"][0] == "start"]
    python_own = bit(signal.SIGPIPE) | bit(signal.SIGXFSZ)  # the stand-in broker is Python, which ignores these
    # Equal to a foreground command's: SIGINT and SIGQUIT free (unless this test's own parent ignored them).
    assert int(start["ignored_signals"], 16) & ~python_own == int(foreground.stdout.split()[1], 16)


def bit(signum: int) -> int:
    return 1 << (signum - 1)


NAMES = {"service_name": "svc", "curve_secret_name": "curve", "broker_config_name": "broker",
         "entrypoint_name": "entrypoint", "scale_config_name": "scale"}  # fmt: skip


def load_spec_of(**overrides: Any) -> MiniClusterSpec:
    return load_spec({f"minicluster:{key}": value for key, value in config(**overrides).items()}, "dev")
