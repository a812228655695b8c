"""The Flux instance's own view of itself, as rank 0's broker has it: nodes up, down, drained, and spare
(beyond the current size, up to maxSize: not started); cores
and GPUs free and allocated; jobs by state and result; each queue started or stopped, with its reason;
the instance's uptime. One JSON object on stdout, for `minicluster status` (one exec into rank 0) and
for the metrics rank 0 serves.

Run in the broker's container with Flux's own Python, against the local broker:
    FLUX_URI=local:///var/lib/minicluster/run/local flux python readings.py
Every reading is a single RPC that answers from counters the broker keeps (job-list's job-stats,
resource and queue status), so it costs the same with 10 jobs or 10 000. Annotations are strings: an
image's Python may be older than the project's.
"""

import json
import os
import sys
import time
from typing import Any

import flux  # type: ignore[import-not-found]
from flux.resource import resource_list, resource_status  # type: ignore[import-not-found]


def read(handle: "flux.Flux") -> "dict[str, Any]":
    listing = resource_list(handle).get()
    status = resource_status(handle).get()
    drained = drained_ranks(status)
    offline = set(status.offline) - drained
    size = current_size()
    spare = {rank for rank in offline if size is not None and rank >= size}
    stats = handle.rpc("job-list.job-stats", {}).get()
    return {
        "nodes": {
            "up": len(set(status.online) - drained),
            "down": len(offline - spare),
            "drained": len(drained),
            "spare": len(spare),
        },
        "cores": {"free": listing.free.ncores, "allocated": listing.allocated.ncores},
        "gpus": {"free": listing.free.ngpus, "allocated": listing.allocated.ngpus},
        "jobs": {"all": jobs(stats), **{q["name"]: jobs(q) for q in stats.get("queues", [])}},
        "queues": queues(handle),
        "uptime": round(time.time() - float(handle.attr_get("broker.starttime")), 1),
    }


def drained_ranks(status: Any) -> "set[int]":
    """Ranks drained or still draining (resource_status): no new work lands there."""
    return set(status.drained + status.draining)


def current_size() -> "int | None":
    """The cluster's current size (the scale ConfigMap, which a resize rewrites), in a broker pod: the
    ranks from it up to maxSize are not down, only not started (spare)."""
    scale = os.environ.get("MC_SCALE_DIR")
    if not scale:
        return None
    with open(os.path.join(scale, "size")) as found:
        return int(found.read().strip())


def jobs(stats: "dict[str, Any]") -> "dict[str, int]":
    """Jobs by state, as `flux jobs --stats` counts them."""
    states = stats["job_states"]
    return {
        "pending": states["depend"] + states["priority"] + states["sched"],
        "running": states["run"] + states["cleanup"],
        "completed": stats["successful"],
        "failed": stats["failed"],
        "cancelled": stats["canceled"],
        "timeout": stats["timeout"],
    }


def queues(handle: "flux.Flux") -> "list[dict[str, Any]]":
    """Each queue (the default one is named ""), started or stopped, with the reason it was stopped."""
    names = handle.rpc("job-manager.queue-list").get()["queues"] or [""]
    found = []
    for name in names:
        status = handle.rpc("job-manager.queue-status", {"name": name} if name else {}, nodeid=0).get()
        found.append({"name": name, "started": status["start"], "enabled": status["enable"],
                      "reason": status.get("stop_reason", "")})  # fmt: skip
    return found


def main() -> int:
    json.dump(read(flux.Flux()), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
