#!/usr/bin/env python3
"""Does anything grow with the cluster's size? Measures, per size, the Pulumi program's evaluation on
mocks and render's time (the best of --repeat runs), the steps each takes in the project's code
(tests/bench/steps.py: the same count on any machine, under any load) and render's output size, each
as a ratio to size 1. It reaches no cluster: the admission check, the one part that reads a cluster,
is off here.

    venv/bin/python -m tests.bench.sizes                       # sizes 1, 10, 100, 1000, 10000
    venv/bin/python -m tests.bench.sizes --sizes 1,10,100 --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from flux_minicluster.builders.rendering import render
from flux_minicluster.config.loader import load_spec
from tests.bench import steps
from tests.harness import deploy  # the same mocks the tests use

DEFAULT_SIZES = (1, 10, 100, 1000, 10_000)
IMAGE = "ghcr.io/flux-framework/flux-restful-api:latest"


@dataclass(frozen=True)
class Measurement:
    size: int
    evaluation_s: float
    render_s: float
    evaluation_steps: int
    render_steps: int
    render_bytes: int


def best_of(repeat: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(size: int, repeat: int) -> Measurement:
    config = {"image": IMAGE, "size": size, "command": "hostname", "admission": "off"}  # mocks only
    spec = load_spec({f"minicluster:{key}": value for key, value in config.items()}, "bench")

    def evaluate() -> object:
        return deploy(config, stack="bench")

    def draw() -> object:
        return render(spec)

    # Timed first: also the warm-up that fills the code's caches, so that the steps are those of a run
    # like the size before it, not of a process's first run.
    evaluation_s, render_s = best_of(repeat, evaluate), best_of(repeat, draw)
    return Measurement(
        size=size,
        evaluation_s=evaluation_s,
        render_s=render_s,
        evaluation_steps=steps.count(evaluate),
        render_steps=steps.count(draw),
        render_bytes=len(render(spec).encode()),
    )


def table(results: list[Measurement]) -> str:
    base = results[0]
    lines = [
        "| size | evaluation (ms) | ratio to size 1 | steps | render (ms) | ratio to size 1 | steps "
        "| render bytes | ratio to size 1 |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r.size} | {r.evaluation_s * 1000:.1f} | {r.evaluation_s / base.evaluation_s:.2f} "
            f"| {r.evaluation_steps} | {r.render_s * 1000:.1f} | {r.render_s / base.render_s:.2f} "
            f"| {r.render_steps} | {r.render_bytes} | {r.render_bytes / base.render_bytes:.3f} |"
        )
    return "\n".join(lines)


def run(sizes: list[int], repeat: int) -> list[Measurement]:
    return [measure(size, repeat) for size in sorted(sizes)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="comma-separated sizes")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the best counts")
    args = parser.parse_args()
    print(table(run([int(size) for size in args.sizes.split(",")], args.repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
