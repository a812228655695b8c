"""Rank 0's readings as rows of `minicluster status` (cluster/flux_view.py). The readings themselves
come from real Flux in tests/realflux/test_real_readings.py."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.cluster import flux_view

JOBS = {"pending": 3, "running": 2, "completed": 40, "failed": 1, "cancelled": 4, "timeout": 0}


def reading(**overrides: Any) -> dict[str, Any]:
    base = {
        "nodes": {"up": 3, "down": 1, "drained": 0}, "cores": {"free": 4, "allocated": 8},
        "gpus": {"free": 0, "allocated": 0}, "jobs": {"all": JOBS},
        "queues": [{"name": "", "started": True, "enabled": True, "reason": ""}], "uptime": 3725.4,
    }  # fmt: skip
    return {**base, **overrides}


def test_an_instance_without_gpus_shows_nodes_cores_jobs_its_queue_and_uptime() -> None:
    assert flux_view.rows(reading()) == [
        ("flux nodes", "3 up, 1 down, 0 drained"),
        ("flux cores", "4 free, 8 allocated"),
        ("flux jobs", "3 pending, 2 running, 40 completed, 1 failed, 4 cancelled, 0 timeout"),
        ("flux queue", "started"),
        ("flux uptime", "1h 2m"),
    ]


def test_spare_ranks_are_room_up_to_max_size() -> None:
    nodes = {"up": 2, "down": 0, "drained": 0, "spare": 2}
    assert dict(flux_view.rows(reading(nodes=nodes)))["flux nodes"] == "2 up, 0 down, 0 drained (2 more up to maxSize)"


def test_gpus_are_shown_when_the_instance_has_some() -> None:
    assert ("flux gpus", "1 free, 3 allocated") in flux_view.rows(reading(gpus={"free": 1, "allocated": 3}))


def test_named_queues_say_whether_they_schedule_and_why_not() -> None:
    queues = [
        {"name": "batch", "started": True, "enabled": True, "reason": ""},
        {"name": "debug", "started": False, "enabled": False, "reason": "maintenance"},
    ]
    found = dict(flux_view.rows(reading(queues=queues)))
    assert found["flux queue batch"] == "started"
    assert found["flux queue debug"] == "stopped: maintenance, submission disabled"


@pytest.mark.parametrize("seconds", [(42, "42s"), (185, "3m 5s")])
def test_uptime_reads_as_a_duration(seconds: tuple[float, str]) -> None:
    assert dict(flux_view.rows(reading(uptime=seconds[0])))["flux uptime"] == seconds[1]


def test_a_document_that_is_not_readings_is_refused() -> None:
    with pytest.raises(ValueError, match=r"not the readings of readings\.py"):
        flux_view.rows({"nodes": {"up": 1}})
