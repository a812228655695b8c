#!/usr/bin/env python3
"""How long the admission check (every object's dry run, then the cluster's room) takes against an API
server some way off: the real control plane reached through a proxy on this machine that holds each
chunk of data `--delay` seconds in each direction, against the same API server direct. A round trip is
one request's time (a GET of the namespace) through the proxy, so the check's time in round trips says
how many waits it has one after another.

    MC_CONTROL_PLANE=DIR venv/bin/python -m tests.bench.admission_distance
    MC_CONTROL_PLANE=DIR venv/bin/python -m tests.bench.admission_distance --delay 0.025 --runs 9

Needs a running control plane (python3 tests/engines/control_plane.py DIR, as `.ci/run` starts one).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from flux_minicluster.cluster import admission, api_calls, kube
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.engines.control_plane import ControlPlane
from tests.harness import OWNER


def _pipe(source: socket.socket, target: socket.socket, delay: float) -> None:
    try:
        while data := source.recv(65536):
            time.sleep(delay)
            target.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, target):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


def proxy(server_port: int, delay: float) -> int:
    """A local port that forwards to `server_port`, `delay` seconds late each way: its number."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            client, _ = listener.accept()
            server = socket.create_connection(("127.0.0.1", server_port))
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=_pipe, args=(source, target, delay), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    port: int = listener.getsockname()[1]
    return port


def median_seconds(step: Callable[[], object], runs: int) -> float:
    step()  # the first connection and the client's imports are not what is measured
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def one_request(api_client: object) -> None:
    api_calls.request(api_client, "GET", "/api/v1/namespaces/default")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.01, help="seconds each way (0.01: a 20 ms round trip)")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    plane = ControlPlane.attach(Path(os.environ["MC_CONTROL_PLANE"]))
    spec = load_spec({f"minicluster:{key}": value for key, value in config(admission="refuse").items()}, "dev")
    direct = yaml.safe_load(plane.kubeconfig.read_text())
    server = direct["clusters"][0]["cluster"]["server"]
    far = proxy(int(server.rsplit(":", 1)[1]), args.delay)
    direct["clusters"][0]["cluster"]["server"] = f"{server.rsplit(':', 1)[0]}:{far}"
    with tempfile.NamedTemporaryFile("w", suffix=".kubeconfig") as distant:
        yaml.safe_dump(direct, distant)
        distant.flush()
        rows = []
        for where, kubeconfig in (("direct", str(plane.kubeconfig)), ("through the proxy", distant.name)):
            os.environ["KUBECONFIG"] = kubeconfig
            trip = median_seconds(functools.partial(one_request, kube.api_client(None)), 9)
            check = median_seconds(lambda: admission.check(spec, Access(), OWNER), args.runs)
            rows.append(f"| {where} | {trip * 1000:.1f} | {check * 1000:.0f} | {check / trip:.1f} |")
    print("| API server | one round trip (ms) | the admission check (ms) | in round trips |")
    print("| --- | ---: | ---: | ---: |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
