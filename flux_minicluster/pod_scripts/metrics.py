"""Prometheus metrics of a MiniCluster, served by each broker pod from its Flux container with Flux's
own Python (no other image): `flux python metrics.py`, started by the entrypoint when metrics are on.

Every pod answers GET /metrics with its own broker's state (minicluster_broker_up, by rank); rank 0
adds the instance's own view (readings.py beside this file: nodes, cores, GPUs, jobs, queues, uptime)
and the cluster's size and bounds, so that no value is counted once per pod. Readings are cached for
MC_METRICS_CACHE seconds: a scrape costs the same with 10 jobs or 10 000.

Environment (set by the Job, flux_minicluster/builders/files.py): MC_METRICS_PORT, MC_METRICS_CACHE,
MC_RANK, MC_LOCAL_URI, MC_SCALE_DIR, MC_MIN_SIZE, MC_MAX_SIZE.
"""

import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # strings below: an image's Python may be older than the project's
    Sample = tuple[str, dict[str, str], float]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # readings.py is beside this file


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
GAUGES = {
    "minicluster_broker_up": "1 while this pod's broker is in the instance (its run state), 0 otherwise.",
    "flux_nodes": "Nodes of the instance by state (up, down, drained; spare: beyond the current size).",
    "flux_cores": "Cores of the instance by state (free, allocated).",
    "flux_gpus": "GPUs of the instance by state (free, allocated).",
    "flux_jobs": "Jobs by state and queue (pending, running; completed, failed, cancelled, timeout since start).",
    "flux_queue_started": "1 while the queue schedules jobs, 0 when it is stopped.",
    "flux_uptime_seconds": "Seconds since the instance's rank 0 broker started.",
    "minicluster_size": "Brokers the cluster has now (its current size).",
    "minicluster_min_size": "The fewest brokers the cluster may shrink to (minSize).",
    "minicluster_max_size": "The most brokers the cluster may grow to (maxSize).",
}


class Source:
    """The readings, at most MC_METRICS_CACHE seconds old."""

    def __init__(self) -> None:
        self.rank = int(os.environ["MC_RANK"])
        self.cache = float(os.environ["MC_METRICS_CACHE"])
        self.lock = threading.Lock()
        self.taken = -float("inf")
        self.samples: list[tuple[str, dict[str, str], float]] = []

    def current(self) -> "list[Sample]":
        with self.lock:
            if time.monotonic() - self.taken >= self.cache:
                self.samples = self.read()
                self.taken = time.monotonic()
            return self.samples

    def read(self) -> "list[Sample]":
        # Flux's bindings are imported at the first scrape, not at start: the server starts beside the
        # broker, and their import would take twice its CPU while the broker comes up.
        import flux  # type: ignore[import-not-found]
        import readings  # type: ignore[import-not-found]

        rank = {"rank": str(self.rank)}
        try:
            handle = flux.Flux(os.environ["MC_LOCAL_URI"])
            if handle.rpc("state-machine.get", {}).get()["state"] != "run":  # not in the instance (yet)
                return [("minicluster_broker_up", rank, 0.0)]
            found = readings.read(handle) if self.rank == 0 else None
        except OSError:  # the broker is not up (yet, or any more)
            return [("minicluster_broker_up", rank, 0.0)]
        samples: list[Sample] = [("minicluster_broker_up", rank, 1.0)]
        if found is not None:
            samples += instance(found) + sizes(readings.current_size())
        return samples


def instance(found: "dict[str, Any]") -> "list[Sample]":
    samples: list[Sample] = []
    for name in ("nodes", "cores", "gpus"):
        samples += [(f"flux_{name}", {"state": state}, count) for state, count in found[name].items()]
    for queue, counts in found["jobs"].items():
        samples += [("flux_jobs", {"state": state, "queue": queue}, n) for state, n in counts.items()]
    samples += [("flux_queue_started", {"queue": q["name"]}, int(q["started"])) for q in found["queues"]]
    samples.append(("flux_uptime_seconds", {}, found["uptime"]))
    return samples


def sizes(size: "int | None") -> "list[Sample]":
    """The current size (readings.current_size: the scale ConfigMap, which a resize rewrites; in every
    broker pod) and its bounds."""
    bounds: list[Sample] = [("minicluster_min_size", {}, int(os.environ["MC_MIN_SIZE"])),
                            ("minicluster_max_size", {}, int(os.environ["MC_MAX_SIZE"]))]  # fmt: skip
    return ([("minicluster_size", {}, size)] if size is not None else []) + bounds


def exposition(samples: "list[Sample]") -> str:
    """Prometheus' text format: each metric's HELP and TYPE, then its samples."""
    lines = []
    for name, help_text in GAUGES.items():
        own = [(labels, value) for metric, labels, value in samples if metric == name]
        if not own:
            continue
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        for labels, value in own:
            shown = ",".join(f'{key}="{escape(text)}"' for key, text in labels.items())
            lines.append(f"{name}{{{shown}}} {number(value)}" if shown else f"{name} {number(value)}")
    return "\n".join(lines) + "\n"


def number(value: float) -> str:
    """Whole numbers as they are (a count of a million jobs stays exact), others in full."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Handler(BaseHTTPRequestHandler):
    source: Source

    def do_GET(self) -> None:
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404, "only /metrics is served here")
            return
        body = exposition(self.source.current()).encode()
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # scrapes are not worth a log line
        pass


def main() -> int:
    Handler.source = Source()
    server = ThreadingHTTPServer(("", int(os.environ["MC_METRICS_PORT"])), Handler)
    server.daemon_threads = True
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
