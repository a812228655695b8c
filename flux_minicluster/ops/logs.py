"""`minicluster logs`: one rank's broker log, or every rank's, merged as the brokers write them.
Following, a rank's log goes on in its replacement pod (rank 0 handed over after an eviction, a worker
replaced), as long as the Job runs: a follow ended with the pod, and said nothing of why."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

from flux_minicluster.cluster import objects
from flux_minicluster.cluster.deployed import EXIT_NOT_RUNNING, EXIT_OK, Cluster, Failure, note
from flux_minicluster.cluster.status import live_size, pod_state, without_pods
from flux_minicluster.cluster.waiting import Clock


def cmd_logs(cluster: Cluster, rank: int, follow: bool) -> int:
    pod = cluster.pod_of_rank(rank)
    state = pod_state(pod)
    if not state.has_log:
        raise Failure(EXIT_NOT_RUNNING, f"rank {rank}'s pod {pod.metadata.name} has not started: {state}; see `status`")
    if state.restarting:
        note(f"rank {rank}'s broker is not running ({state}); the log of its last run:")
    shown = 0
    for _, line in _rank_lines(cluster, rank, pod, follow and not state.restarting, state.restarting):
        print(line, flush=follow)
        shown += 1
    if not shown:
        note(f"rank {rank}'s log is empty so far")
    if state.label == "Failed":
        note(f"rank {rank}'s pod failed ({state.detail})")
    return EXIT_OK


def _rank_lines(
    cluster: Cluster, rank: int, pod: Any, follow: bool, previous: bool, clock: Clock | None = None
) -> Iterator[tuple[int, str]]:
    """The rank's log; following, on through each pod that replaces it, until the Job is over."""
    while pod is not None:
        for line in cluster.log_lines(pod, follow=follow, previous=previous):
            yield rank, line
        pod = _replacement(cluster, rank, pod, clock or Clock()) if follow else None


def _replacement(cluster: Cluster, rank: int, ended: Any, clock: Clock) -> Any | None:
    """The pod that replaces `ended`, once it has a log; None when none will (the Job is over, the rank
    succeeded or left the cluster). Said on stderr, so that the log itself stays as the brokers wrote it."""
    name, waiting = ended.metadata.name, False
    while True:
        job = cluster.job()
        if finished := objects.job_finished(job):
            note(f"rank {rank}'s pod {name} ended, and the Job has {finished}")
            return None
        if rank >= live_size(job, cluster.spec):
            note(f"rank {rank}'s pod {name} ended: the cluster shrank below it")
            return None
        pods = [pod for pod in cluster.pods() if objects.pod_rank(pod) == rank]  # the oldest first
        before = next((pod_state(pod) for pod in pods if pod.metadata.name == name), None)
        if before is not None and before.label == "Succeeded":
            return None  # a Job never runs a succeeded index again
        for pod in _newer(pods, ended):
            if pod_state(pod).has_log:
                note(f"rank {rank}'s pod {name} ended; following its replacement, {pod.metadata.name}")
                return pod
        if not waiting and (before is None or before.finished):  # not while its end is still on its way
            note(f"rank {rank}'s pod {name} ended; waiting for its replacement (Ctrl-C to stop)")
            waiting = True
        clock.sleep(clock.poll)


def _newer(pods: list[Any], ended: Any) -> list[Any]:
    """The pods (of one rank, the oldest first) made after `ended`: not one it replaced itself, which the
    Job keeps listed when it failed."""
    names = [pod.metadata.name for pod in pods]
    if ended.metadata.name in names:
        return pods[names.index(ended.metadata.name) + 1 :]
    since = ended.metadata.creation_timestamp
    return [pod for pod in pods if since is None or (pod.metadata.creation_timestamp or since) >= since]


def cmd_logs_all(cluster: Cluster, follow: bool) -> int:
    """Every rank's log, each line prefixed with its rank; following, lines come as the brokers write them."""
    job = cluster.job()
    size = live_size(job, cluster.spec)
    by_rank = {objects.pod_rank(pod): pod for pod in cluster.pods()}
    readable = []
    for rank in range(size):
        pod = by_rank.get(rank)
        state = pod_state(pod) if pod is not None else None
        if state is None:
            note(f"rank {rank}: no pod yet")
        elif not state.has_log:
            note(f"rank {rank}: not started: {state}")
        else:
            readable.append((rank, pod, state.restarting))
    if not by_rank:
        raise Failure(EXIT_NOT_RUNNING, f"no rank has a pod: {without_pods(job)}; see `status`")
    if not readable:
        raise Failure(EXIT_NOT_RUNNING, "no rank's broker has started yet; see `status`")
    lines = _merged if follow else _in_rank_order
    for rank, line in lines(cluster, readable, follow):
        print(f"[rank {rank}] {line}", flush=follow)
    return EXIT_OK


def _in_rank_order(cluster: Cluster, readable: list[tuple[int, Any, bool]], _follow: bool) -> Iterator[tuple[int, str]]:
    for rank, pod, previous in readable:
        for line in cluster.log_lines(pod, follow=False, previous=previous):
            yield rank, line


def _merged(cluster: Cluster, readable: list[tuple[int, Any, bool]], _follow: bool) -> Iterator[tuple[int, str]]:
    """One reader thread per rank; lines are printed as they arrive, a failure ends them all."""
    lines: queue.Queue[tuple[int, str] | Failure | None] = queue.Queue()

    def read(rank: int, pod: Any, previous: bool) -> None:
        try:
            for line in _rank_lines(cluster, rank, pod, not previous, previous):
                lines.put(line)
        except Failure as failure:
            lines.put(failure)
        finally:
            lines.put(None)

    for reader in readable:
        threading.Thread(target=read, args=reader, daemon=True).start()
    open_streams = len(readable)
    while open_streams:
        item = lines.get()
        if item is None:
            open_streams -= 1
        elif isinstance(item, Failure):
            raise item
        else:
            yield item
