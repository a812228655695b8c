"""Flux's own view of a running MiniCluster, beside Kubernetes': what rank 0's readings (the pods'
readings.py, one exec) say of nodes, cores, GPUs, jobs and queues, as rows of `minicluster status`.
Pure: it reads the readings' JSON, it asks for nothing."""

from __future__ import annotations

from typing import Any

READINGS_TIMEOUT = 5.0
"""Seconds `status` waits for rank 0's readings (each is a few RPCs to the local broker: milliseconds)."""
JOB_RESULTS = ("pending", "running", "completed", "failed", "cancelled", "timeout")


def rows(reading: dict[str, Any]) -> list[tuple[str, str]]:
    """The readings as (label, value) rows. Raises ValueError for a document that is not readings."""
    try:
        nodes, cores, gpus = reading["nodes"], reading["cores"], reading["gpus"]
        found = [
            ("flux nodes", f"{nodes['up']} up, {nodes['down']} down, {nodes['drained']} drained{_spare(nodes)}"),
            ("flux cores", f"{cores['free']} free, {cores['allocated']} allocated"),
        ]
        if gpus["free"] or gpus["allocated"]:
            found.append(("flux gpus", f"{gpus['free']} free, {gpus['allocated']} allocated"))
        jobs = reading["jobs"]["all"]
        found.append(("flux jobs", ", ".join(f"{jobs[result]} {result}" for result in JOB_RESULTS)))
        for queue in reading["queues"]:
            found.append((f"flux queue {queue['name']}".rstrip(), _queue_state(queue)))
        found.append(("flux uptime", _duration(float(reading["uptime"]))))
    except (KeyError, TypeError) as missing:
        raise ValueError(f"not the readings of readings.py (no {missing})") from None
    return found


def _spare(nodes: dict[str, Any]) -> str:
    return f" ({nodes['spare']} more up to maxSize)" if nodes.get("spare") else ""


def _queue_state(queue: dict[str, Any]) -> str:
    state = "started" if queue["started"] else f"stopped{': ' + queue['reason'] if queue['reason'] else ''}"
    return state if queue["enabled"] else f"{state}, submission disabled"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"
