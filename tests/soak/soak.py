#!/usr/bin/env python3
"""A soak of a persistent MiniCluster on real Flux (issue 38): 4 brokers, rank 0's state on a claim, fed
a stream of short jobs (one node, two, or all four, so that some queue behind others) while faults come
in a seeded random order; each job accounted for at the end, each fault's recovery timed.

The pods run in the test kubelet (tests/kubelet: real brokers, each pod in its own namespaces); a lost
pod is replaced as the Job controller replaces it with podReplacementPolicy Failed: once the old one
has stopped. Faults:
  worker deleted    a worker's pod stopped as the kubelet stops it (SIGTERM, then its grace period)
  worker killed     a worker's processes SIGKILLed (a node that died)
  rank 0 evicted    rank 0 stopped as for an eviction: its hand-over runs
  rank 0 killed     rank 0 SIGKILLed: no hand-over, its replacement restarts from the last checkpoint
  worker and rank 0 a worker killed and rank 0 evicted at once
  worker cut off    a worker's link down for CUT_OFF seconds (its node's network gone), then back up
Recovery is timed from the fault's end (the kill, or the link back up) to every rank up in rank 0's
view, and to a job run after it; then the ranks Flux holds drained are read (none, or the fault left one
out for good). The API server away during an autoscaled resize is a test of its own on the real control
plane (tests/realengine/test_autoscale_end_to_end.py): these pods run without one.

Each submitted job ends as one of: completed; failed or cancelled, with Flux's exception (its type and
note); still active at the end; lost (Flux no longer knows it). The contract (docs/lost-pods.md): no
job is lost, but to `rank 0 killed`, and then only jobs submitted within `checkpointPeriod` of it.

    venv/bin/python -m tests.soak.soak                          # seed 1, 12 faults: 2 of each kind
    venv/bin/python -m tests.soak.soak --seed 7 --faults 24
    venv/bin/python -m tests.soak.soak --seed 9 --topology kary:2   # a worker below another

Needs root (namespaces) and flux-core 0.88 installed (MC_FLUX_PREFIX, default /opt/flux: tests/kubelet/image.py).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from flux_minicluster.builders.manifests import LOCAL_URI
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.kubelet.pod import Pod, wait_until
from tests.kubelet.pods import Kubelet
from tests.soak.records import Fault, Outcome, Submitted, report

SIZE = 4
CHECKPOINT_PERIOD = 2.0
STATE = {"claimName": "flux-state", "checkpointPeriod": f"{CHECKPOINT_PERIOD:g}s"}
FAULTS = ("worker deleted", "worker killed", "rank 0 evicted", "rank 0 killed", "worker and rank 0", "worker cut off")
CUT_OFF = 30.0
RECOVERY_TIMEOUT = 120.0
VIEWS = (["resource", "status"], ["jobs", "-a"], ["queue", "status"], ["overlay", "status"], ["dmesg"])
"""What a failed recovery prints of rank 0's view, its log last."""


class Soak:
    def __init__(self, directory: Path, seed: int, interval: float = 0.3, topology: str | None = None) -> None:
        overrides = {"command": None, "size": SIZE, "stateVolume": STATE, "backoffLimit": 100, "topology": topology}
        spec = load_spec({f"minicluster:{key}": value for key, value in config(**overrides).items()}, "soak")
        self.kubelet = Kubelet(directory, spec)
        self.jobs_rng, self.faults_rng = random.Random(seed), random.Random(seed + 1)
        self.interval = interval
        self.submitted: list[Submitted] = []
        self.refused = self.unanswered = 0
        self.stopping = threading.Event()
        self.submitter = threading.Thread(target=self._submit_stream, daemon=True)
        self.controller = threading.Thread(target=self._replace_failed_pods, daemon=True)
        self.completed_ranks: list[int] = []
        """Ranks whose pod exited 0: the Job counts them done and does not replace them."""

    def run(self, faults: list[str], settle: float = 3.0) -> Outcome:
        self.kubelet.start_all_ready(60)
        self.submitter.start()
        self.controller.start()
        done = []
        for kind in faults:
            time.sleep(settle)
            done.append(self.inject(kind))
            print(f"{kind} {done[-1].ranks}: whole after {done[-1].whole_after:.1f}s, moving after "
                  f"{done[-1].moving_after:.1f}s, drained: {done[-1].drained or 'none'}", flush=True)  # fmt: skip
        time.sleep(settle)
        self.stopping.set()
        self.submitter.join()
        self.controller.join()
        return self.account(done)

    def close(self) -> None:
        self.stopping.set()
        self.kubelet.close()

    # -- the job stream -------------------------------------------------------------------------

    def _submit_stream(self) -> None:
        while not self.stopping.is_set():
            nodes = self.jobs_rng.choice([1, 1, 1, 2, SIZE])
            seconds = self.jobs_rng.choice(["0.2", "0.5", "1"])
            try:
                job = self.rank0().flux("submit", f"-N{nodes}", "sleep", seconds, timeout=10).strip()
            except (RuntimeError, subprocess.TimeoutExpired):
                self.refused += 1  # rank 0 away: the submission failed, and said so
            else:
                if job:
                    self.submitted.append(Submitted(job, time.time()))
                else:
                    self.unanswered += 1
            self.stopping.wait(self.interval)

    def rank0(self) -> Pod:
        return self.kubelet.pod(0)

    # -- faults ---------------------------------------------------------------------------------

    def inject(self, kind: str) -> Fault:
        worker = self.faults_rng.randrange(1, SIZE)
        ranks = {"rank 0 evicted": (0,), "rank 0 killed": (0,), "worker and rank 0": (worker, 0)}.get(kind, (worker,))
        fault = Fault(kind, ranks, time.time())
        if kind == "worker cut off":
            with self.kubelet.cut_off(worker):
                time.sleep(CUT_OFF)
        else:
            stops = [threading.Thread(target=self._replace, args=(rank, self._graceful(kind, rank))) for rank in ranks]
            for stop in stops:
                stop.start()
            for stop in stops:
                stop.join()
        fault.ended = time.time()
        self._recovered(fault)
        return fault

    @staticmethod
    def _graceful(kind: str, rank: int) -> bool:
        return kind in ("worker deleted", "rank 0 evicted") or (kind == "worker and rank 0" and rank == 0)

    def _replace(self, rank: int, graceful: bool) -> None:
        """The pod stopped (or killed); the Job controller's part (_replace_failed_pods) replaces it."""
        pod = self.kubelet.pod(rank)
        if graceful:
            pod.terminate(grace=30)
        else:
            pod.kill()
            pod.wait(timeout=30)

    def _replace_failed_pods(self) -> None:
        """The Job controller with podReplacementPolicy Failed: a pod that failed, for whatever reason,
        is replaced once it has stopped; one that exited 0 counts as done."""
        while not self.stopping.wait(0.1):
            for rank in range(SIZE):
                pod = self.kubelet.pod(rank)
                if pod.running() or rank in self.completed_ranks:
                    continue
                if pod.wait(timeout=1) == 0:
                    self.completed_ranks.append(rank)
                    print(f"rank {rank}'s pod exited 0: the Job counts it done", flush=True)
                else:
                    self.kubelet.start(rank)

    def _recovered(self, fault: Fault) -> None:
        wait_until(self._whole, "every rank up", RECOVERY_TIMEOUT, poll=0.1)
        fault.whole_after = time.time() - fault.ended
        # A job of its own, ahead of the stream's (urgency 31): its end says the queue moves.
        try:
            self.rank0().flux("run", "--urgency=31", "-N1", "true", timeout=RECOVERY_TIMEOUT)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            rank0 = self.rank0()
            views = [rank0.exec("env", f"FLUX_URI={LOCAL_URI}", "flux", *argv).stdout for argv in VIEWS]
            raise RuntimeError(
                f"after {fault.kind} {fault.ranks}: the queue did not move ({error})\n" + "\n".join(views)
            ) from None
        fault.moving_after = time.time() - fault.ended
        fault.drained = self.rank0().flux("resource", "drain", "-n", "-o", "{ranks}").strip()

    def _whole(self) -> bool:
        """Every pod ready, and every rank available in rank 0's view (online, not drained): a worker
        cut off may still run its broker, and so pass its probe, while rank 0 has lost it; a worker's
        replacement undrains the rank its predecessor drained as it stopped."""
        if not all(self.kubelet.pod(rank).ready() for rank in range(SIZE)):
            return False
        try:
            return self.rank0().usable_ranks(timeout=5) == f"0-{SIZE - 1}"
        except (RuntimeError, subprocess.TimeoutExpired):
            return False

    # -- accounting -----------------------------------------------------------------------------

    def account(self, faults: list[Fault]) -> Outcome:
        rank0 = self.rank0()

        def still() -> list[str]:  # the active ones
            return rank0.flux("jobs", "-n", "-o", "{id.f58}").split()

        with contextlib.suppress(TimeoutError):  # what is left is reported as still active
            wait_until(lambda: not still(), "the queue to drain", RECOVERY_TIMEOUT, poll=0.5)
        listing = rank0.flux("jobs", "-a", "-n", "-o", "{id.f58}|{result}|{exception.type}|{exception.note}")
        ended = {}
        for line in listing.splitlines():
            job, result, kind, note = line.split("|", 3)
            ended[job] = result if result == "COMPLETED" else f"{result} ({kind}: {note})"
        outcome = Outcome(self.submitted, ended, faults, self.refused, self.unanswered, CHECKPOINT_PERIOD)
        active = set(still())
        outcome.active = [job.job for job in self.submitted if job.job in active]
        outcome.lost = [job for job in self.submitted if job.job not in ended and job.job not in active]
        return outcome


def schedule(seed: int, count: int) -> list[str]:
    """Each fault kind in turn, as many times as fits, in a seeded random order."""
    kinds = [FAULTS[index % len(FAULTS)] for index in range(count)]
    random.Random(seed).shuffle(kinds)
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults", type=int, default=2 * len(FAULTS))
    parser.add_argument("--topology", help="tbon.topo: kary:2 puts rank 3 below rank 1 (default: Flux's, flat here)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        soak = Soak(Path(directory), args.seed, topology=args.topology)
        try:
            outcome = soak.run(schedule(args.seed, args.faults))
        finally:
            soak.close()
    print(report(outcome))
    return 1 if outcome.lost_beyond_the_bound() or outcome.active or any(f.drained for f in outcome.faults) else 0


if __name__ == "__main__":
    sys.exit(main())
