#!/usr/bin/env python3
"""What does a scrape of rank 0's metrics cost with many jobs in the instance? Real Flux: Flux's own
instance of 2 brokers (`flux start -s 2`), N jobs submitted held (they stay in the instance), and the
pods' metrics.py serving it as rank 0 does, without its cache (MC_METRICS_CACHE 0: every scrape reads
Flux). Each scrape is one GET /metrics over loopback, timed whole.

    venv/bin/python -m tests.bench.metrics                  # 1000 jobs, 20 scrapes
    venv/bin/python -m tests.bench.metrics --jobs 5000 --scrapes 50

Needs flux-core 0.88 installed (MC_FLUX_PREFIX, default /opt/flux: tests/kubelet/image.py).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from flux_minicluster.builders import files
from tests.bench.spread import spread
from tests.flux_instance import Instance
from tests.kubelet.image import FLUX

METRICS = files.POD_SCRIPTS / "metrics.py"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def measure(jobs: int, scrapes: int) -> list[float]:
    """Milliseconds of each scrape."""
    instance = Instance(2)
    try:
        held = instance.run(str(FLUX), "submit", "--urgency=hold", f"--cc=1-{jobs}", "--quiet", "true", timeout=600)
        assert held.returncode == 0, held.stderr
        with tempfile.TemporaryDirectory() as scale:
            (Path(scale) / "size").write_text("2")
            port = free_port()
            env = {"MC_METRICS_PORT": str(port), "MC_METRICS_CACHE": "0", "MC_RANK": "0", "MC_LOCAL_URI": instance.uri,
                   "MC_SCALE_DIR": scale, "MC_MIN_SIZE": "1", "MC_MAX_SIZE": "2"}  # fmt: skip
            server = subprocess.Popen([str(FLUX), "python", str(METRICS)], env=instance.env(env))
            try:
                url = f"http://127.0.0.1:{port}/metrics"
                body = wait_for(url, server)
                assert f'flux_jobs{{state="pending",queue="all"}} {jobs}' in body, body
                times = []
                for _ in range(scrapes):
                    started = time.perf_counter()
                    urllib.request.urlopen(url, timeout=10).read()
                    times.append((time.perf_counter() - started) * 1000)
                return times
            finally:
                server.terminate()
                server.wait(timeout=10)
    finally:
        instance.close()


def wait_for(url: str, server: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 30
    while True:
        try:
            return str(urllib.request.urlopen(url, timeout=10).read().decode())
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1000, help="jobs held in the instance (default 1000)")
    parser.add_argument("--scrapes", type=int, default=20, help="scrapes timed (default 20)")
    args = parser.parse_args()
    times = measure(args.jobs, args.scrapes)
    print("| jobs in the instance | scrapes | min (ms) | median (ms) | max (ms) |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    print(f"| {args.jobs} | {args.scrapes} | {spread(times, 1)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
