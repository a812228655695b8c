"""A broker pod's life on real Flux: the readiness probe, SIGTERM as the kubelet sends it, and a
worker whose broker dies (tests/kubelet runs the pods)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from flux_minicluster.builders.manifests import LOCAL_URI
from flux_minicluster.config import lifecycle
from tests.kubelet.pod import Pod, ProbeRun, wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
Make = Callable[..., Kubelet]
STOPPED = 143  # 128 + SIGTERM: a pod told to stop never exits 0, or the Job would count it done


def persistent(minicluster: Make, size: int = 3) -> tuple[Kubelet, list[Pod]]:
    cluster = minicluster(size=size, command=None)
    pods = cluster.start_all_ready()
    return cluster, pods


def online(rank0: Pod) -> str:
    return rank0.flux("resource", "status", "-s", "online", "-no", "{ranks}").strip()


def kill_broker(pod: Pod) -> None:
    """SIGKILL to the pod's broker (the process `flux start` became), not to the pod."""
    done = pod.exec("sh", "-c", "kill -KILL $(cat /var/lib/minicluster/broker.pid)")
    assert done.returncode == 0, done.stderr


# -- readiness -----------------------------------------------------------------------------------------


def test_a_broker_is_not_ready_until_it_is_up_in_the_instance(minicluster: Make) -> None:
    cluster = minicluster(size=2, command=None)
    worker = cluster.start(1)  # rank 0 has no pod yet: the worker's broker runs, waiting to join
    wait_until(lambda: "load-builtins->join" in worker.log, "the worker's broker to start", 10)
    assert [worker.ready() for _ in range(3)] == [False, False, False]
    rank0 = cluster.start(0)
    wait_until(worker.ready, "the worker to be ready once it joined", 20)
    assert rank0.ready()
    assert online(rank0) == "0-1"


def test_a_probe_run_keeps_looking_so_the_run_after_the_broker_entered_the_run_state_says_ready(
    minicluster: Make,
) -> None:
    """As the kubelet runs it: one run every periodSeconds, each within its timeout. A run that says no
    has looked for a while (READY_LOOKS looks, READY_LOOK apart), not once, so the pod is Ready a look
    after its broker is, not a period later (how soon: tests/bench/waits.py, `up`)."""
    cluster = minicluster(size=2, command=None)
    worker = cluster.start(1)
    wait_until(lambda: "load-builtins->join" in worker.log, "the worker's broker to start", 10)
    runs: list[ProbeRun] = []

    def kubelet_probes() -> None:
        for run in worker.probes():
            runs.append(run)
            if run.said:
                return

    prober = threading.Thread(target=kubelet_probes, daemon=True)
    prober.start()
    wait_until(lambda: runs, "the first probe run", 10, poll=0.005)
    cluster.start(0)  # just after a run said no: the worst moment for a probe that only looks once a period
    wait_until(lambda: "quorum->run" in worker.log, "the worker's broker to enter the run state", 20, poll=0.005)
    up = time.monotonic()
    prober.join(timeout=10)
    *said_no, said_yes = runs
    looking = (lifecycle.READY_LOOKS - 1) * lifecycle.READY_LOOK
    assert [run.said for run in runs] == [False] * len(said_no) + [True]
    assert all(run.answered - run.started >= looking for run in said_no)  # each looked for a while
    assert not [run for run in said_no if run.started > up]  # none began with the broker up and said no
    assert said_yes.answered > up


def test_once_ready_the_probe_no_longer_asks_flux_only_whether_that_broker_runs(minicluster: Make) -> None:
    """It runs every 2 s for the pod's life: after the broker is up, bash and kill -0 only."""
    _, (rank0, _, _) = persistent(minicluster)
    without_flux = rank0.exec("env", "MC_FLUX=/nonexistent/flux", *rank0.probe["exec"]["command"])
    assert without_flux.returncode == 0


def test_a_worker_whose_broker_was_killed_is_ready_again_only_through_its_new_broker(minicluster: Make) -> None:
    _, (rank0, worker, _) = persistent(minicluster)
    killed = broker_pid(worker)
    kill_broker(worker)
    wait_until(worker.ready, "the worker's new broker to rejoin", 30)
    assert broker_pid(worker) != killed
    assert "after it had joined the instance: rejoining" in worker.log
    wait_until(lambda: online(rank0) == "0-2", "rank 0 to see it online", 10)  # Flux updates it a moment later
    assert worker.running()


def test_a_worker_is_not_ready_while_its_broker_is_out_of_the_instance(minicluster: Make) -> None:
    """Rank 0 went away: the worker's broker runs again, waiting for rank 0's replacement, and is not in an
    instance: each probe run says no (after looking for a while)."""
    _, (rank0, worker, _) = persistent(minicluster)
    assert rank0.terminate() == STOPPED
    wait_until(lambda: "rejoining when its replacement is up" in worker.log, "the worker to wait for rank 0", 10)
    assert [worker.ready(), worker.ready()] == [False, False]
    assert worker.running()


def broker_pid(pod: Pod) -> str:
    return pod.exec("cat", "/var/lib/minicluster/broker.pid").stdout.strip()


# -- SIGTERM -------------------------------------------------------------------------------------------


def test_a_worker_told_to_stop_exits_143_with_its_rank_drained_before_its_broker_leaves(minicluster: Make) -> None:
    """Drained first: the broker takes a moment to stop, and a job started there meanwhile would fail."""
    _, (rank0, _, worker) = persistent(minicluster)
    assert worker.terminate() == STOPPED  # itself, within the grace period: not killed (137)
    wait_until(lambda: online(rank0) == "0-1", "rank 0 to see the rank go", 10)
    assert drained(rank0) == "2 minicluster: the pod of rank 2 is stopping"
    assert [name for name, _ in resource_events(rank0, "2") if name != "online"] == ["drain", "offline"]


def test_a_worker_whose_probe_has_not_run_since_its_broker_joined_drains_its_rank_too(minicluster: Make) -> None:
    """Found by the soak: a worker whose broker had restarted (after a network cut) was stopped before
    its readiness probe ran again; it stopped without a drain, and a job started there as it stopped."""
    cluster = minicluster(size=3, command=None)
    rank0, _, worker = cluster.start_all()
    wait_until(lambda: rank0.ready() and online(rank0) == "0-2", "every broker to join", 30)
    assert worker.terminate() == STOPPED  # never probed
    assert drained(rank0) == "2 minicluster: the pod of rank 2 is stopping"


def started(rank0: Pod, *command: str) -> str:
    """A job on every node of the 3, once it runs."""
    job = rank0.flux("submit", "-N3", *command).strip()
    wait_until(lambda: rank0.flux("jobs", "-no", "{state}", job).strip() == "RUN", "the job to run", 10)
    return job


def test_a_worker_told_to_stop_under_a_job_ends_it_and_frees_its_other_nodes_at_once(minicluster: Make) -> None:
    """Found by the soak: after a clean stop with the job's shell still running, Flux held the job, and
    every node of it, 5 x kill-timeout (25 s) for the gone rank's shell."""
    _, (rank0, _, worker) = persistent(minicluster)
    job = started(rank0, "sleep", "300")
    assert worker.terminate() == STOPPED
    wait_until(lambda: rank0.flux("jobs", "-no", "{state}", job).strip() == "INACTIVE", "the job to end", 30)
    ended = rank0.flux("jobs", "-no", "{result}|{exception.type}|{exception.note}", job).strip()
    assert ended == "FAILED|node-failure|minicluster: the pod of rank 2 is stopping"
    (freed,) = [stamp for name, stamp in job_events(rank0, job) if name == "free"]
    (left,) = [stamp for name, stamp in resource_events(rank0, "2") if name == "offline"]
    assert freed < left  # every node freed while rank 2's broker was still there: Flux waited for no shell
    assert rank0.flux("run", "-N2", "true", timeout=10) == ""


def test_the_tasks_on_a_stopping_worker_get_sigterm_before_its_broker_stops(minicluster: Make) -> None:
    _, (rank0, _, worker) = persistent(minicluster)
    task = 'trap "echo $(hostname) got SIGTERM; exit 0" TERM; echo listening; sleep 300 & wait'
    job = started(rank0, "bash", "-c", task)
    wait_until(lambda: output(rank0, job).count("listening") == 3, "every task to listen for SIGTERM", 10)
    assert worker.terminate() == STOPPED
    said = f"{worker.hostname} got SIGTERM"
    wait_until(lambda: said in output(rank0, job), "the worker's task to say it got SIGTERM", 10)


def test_no_queued_job_starts_on_a_stopping_worker_and_its_replacement_undrains_the_rank(minicluster: Make) -> None:
    cluster, (rank0, _, worker) = persistent(minicluster)
    started(rank0, "sleep", "300")
    queued = rank0.flux("submit", "-N3", "true").strip()
    assert worker.terminate() == STOPPED
    assert drained(rank0) == "2 minicluster: the pod of rank 2 is stopping"
    assert rank0.flux("jobs", "-no", "{state}", queued).strip() == "SCHED"  # not started there, to fail
    cluster.start(2)
    wait_until(lambda: rank0.flux("jobs", "-no", "{result}", queued).strip() == "COMPLETED", "the queued job", 20)
    assert drained(rank0) == ""


def test_a_rank_drained_for_another_reason_stays_drained_after_its_pod_is_replaced(minicluster: Make) -> None:
    cluster, (rank0, _, worker) = persistent(minicluster)
    started(rank0, "sleep", "300")
    rank0.flux("resource", "drain", "2", "maintenance")
    assert worker.terminate() == STOPPED
    assert marked(rank0, 2)
    cluster.start(2)
    wait_until(lambda: not marked(rank0, 2), "the replacement to look at the mark", 20)
    assert drained(rank0) == "2 maintenance"


def marked(rank0: Pod, rank: int) -> bool:
    """The stopping worker's mark for its replacement to undrain the rank is in the KVS."""
    found = rank0.exec("env", f"FLUX_URI={LOCAL_URI}", "flux", "kvs", "get", f"{lifecycle.DRAIN_MARKS}.{rank}")
    if found.returncode != 0 and f"{lifecycle.DRAIN_MARKS}.{rank}: No such file" not in found.stderr:
        raise RuntimeError(found.stderr)
    return found.returncode == 0


def eventlog(rank0: Pod, kind: str, *target: str) -> list[dict[str, Any]]:
    """An eventlog rank 0 keeps (`flux resource eventlog`, `flux job eventlog JOB`), its events in order,
    each stamped by rank 0's clock."""
    return [json.loads(line) for line in rank0.flux(kind, "eventlog", "-f", "json", *target).splitlines()]


def resource_events(rank0: Pod, rank: str) -> list[tuple[str, float]]:
    """The events of rank `rank` in rank 0's resource eventlog (name, timestamp)."""
    events = eventlog(rank0, "resource")
    return [(e["name"], e["timestamp"]) for e in events if e.get("context", {}).get("idset") == rank]


def job_events(rank0: Pod, job: str) -> list[tuple[str, float]]:
    """The job's eventlog (name, timestamp)."""
    return [(e["name"], e["timestamp"]) for e in eventlog(rank0, "job", job)]


def drained(rank0: Pod) -> str:
    return rank0.flux("resource", "drain", "-no", "{ranks} {reason}").strip()


def output(rank0: Pod, job: str) -> str:
    """What the job's tasks have written so far (its output eventlog)."""
    return rank0.flux("job", "eventlog", "-p", "output", job)


def test_rank0_told_to_stop_exits_at_once_with_143_and_the_workers_wait_for_its_replacement(
    minicluster: Make,
) -> None:
    cluster, (rank0, *workers) = persistent(minicluster)
    assert rank0.terminate() == STOPPED  # the instance's clean shutdown, within the grace period
    for worker in workers:
        wait_until(
            lambda worker=worker: "went away: rejoining when its replacement is up" in worker.log, "the workers", 10
        )
    assert all(worker.running() for worker in workers)
    replacement = cluster.start(0)
    wait_until(lambda: all(worker.ready() for worker in workers), "the workers to rejoin", 30)
    wait_until(lambda: online(replacement) == "0-2", "the replacement to see them online", 10)
