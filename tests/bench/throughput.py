#!/usr/bin/env python3
"""Jobs per second through a persistent MiniCluster, against Flux's own instance of the same size on the
same machine (issue 38's floor). Real brokers: the Job's pods (tests/kubelet: each in its own network
namespace, the real entrypoint, ConfigMaps and Secret) against `flux start -s N`. In both, the same
script runs inside the instance, as flux-core's own throughput test does it: N jobs of `true`, one
node each, submitted at once (`flux submit --cc=1-N`), timed from before the submit to the last
job's end (`flux job wait --all`). In the MiniCluster it runs in rank 0's container (as `minicluster
exec` does), on an instance already up; runs alternate, so both see the same machine.

    venv/bin/python -m tests.bench.throughput                    # 4 brokers, 500 jobs, 5 runs each
    venv/bin/python -m tests.bench.throughput --jobs 200 --runs 3

Needs root (namespaces) and flux-core 0.88 installed (MC_FLUX_PREFIX, default /opt/flux: tests/kubelet/image.py).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from flux_minicluster.builders import manifests
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.flux_instance import flux_env
from tests.kubelet.image import FLUX
from tests.kubelet.pods import Kubelet

# Inside the instance: waitable jobs, so that `flux job wait --all` counts each one's end; the rate
# on stdout. Every job must succeed, or the script fails.
SCRIPT = """
set -e
start=$(date +%s.%N)
flux submit --cc=1-{jobs} -N1 --flags=waitable --quiet true
flux job wait --all
end=$(date +%s.%N)
awk -v start="$start" -v end="$end" 'BEGIN {{ print {jobs} / (end - start) }}'
"""


def minicluster_rate(size: int, jobs: int) -> float:
    spec = load_spec({f"minicluster:{key}": value for key, value in config(size=size, command=None).items()}, "bench")
    with tempfile.TemporaryDirectory() as directory:
        kubelet = Kubelet(Path(directory), spec)
        try:
            pods = kubelet.start_all_ready(60)
            script = SCRIPT.format(jobs=jobs)
            done = pods[0].exec("env", f"FLUX_URI={manifests.LOCAL_URI}", "bash", "-c", script, timeout=600)
            if done.returncode != 0:
                raise RuntimeError(f"the jobs failed in the MiniCluster:\n{done.stdout}\n{done.stderr}")
            return float(done.stdout.split()[-1])
        finally:
            kubelet.close()


def floor_rate(size: int, jobs: int) -> float:
    command = [str(FLUX), "start", "-s", str(size), "bash", "-c", SCRIPT.format(jobs=jobs)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, env=flux_env({}))
    if done.returncode != 0:
        raise RuntimeError(f"the jobs failed under flux start:\n{done.stdout}\n{done.stderr}")
    return float(done.stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    pods, floors = [], []
    for run in range(args.runs):
        pods.append(minicluster_rate(args.size, args.jobs))
        floors.append(floor_rate(args.size, args.jobs))
        print(f"run {run + 1}: MiniCluster {pods[-1]:.1f} jobs/s, flux start {floors[-1]:.1f} jobs/s", flush=True)
    pod, floor = statistics.median(pods), statistics.median(floors)
    print(f"median of {args.runs} ({args.size} brokers, {args.jobs} jobs of `true`, one node each):")
    print(f"  MiniCluster {pod:.1f} jobs/s, flux start -s {args.size} {floor:.1f} jobs/s: ratio {pod / floor:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
