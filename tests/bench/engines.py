#!/usr/bin/env python3
"""What the Pulumi program costs on top of Kubernetes, on the real engines (tests/engines/install.sh):
a real control plane on this machine, the real Pulumi CLI and Kubernetes provider, the Job's pods on
real Flux (the test kubelet as a Node). In alternating runs, each in a namespace of its own:

  - the dev stack (four brokers run `hostname`), its certificate from a keygen pod: `pulumi up`, which
    returns once the Job is complete, against `kubectl apply` of render.py's objects for the same
    stack (its certificate made locally) followed by `kubectl wait` for the same completion;
  - the same objects as `kubectl apply`'s, declared by the plainest Pulumi program
    (tests/bench/plain_program.py): Pulumi's own floor for them, whatever the program;
  - the same program with the certificate from a keygen pod, run from the program's first line
    beside every other object's creation: the floor of any program that keeps the design's keygen pod;
  - for each of these four, what it adds to the dev Job's own run: its time less the Job's creation to
    its completion, as a watch sees them (tests/bench/job_clock.py), so that the pods' and Flux's
    run-to-run noise on a loaded machine is left out;
  - the interactive stack (four brokers, persistent): `pulumi up`, which returns once every broker
    runs;
  - `pulumi destroy` of each, until nothing is left.

    venv/bin/python -m tests.bench.engines              # 5 runs each
    venv/bin/python -m tests.bench.engines --runs 3
    venv/bin/python -m tests.bench.engines --real-node  # the pods in real containers (below)
    venv/bin/python -m tests.bench.engines --set keygen=local --set admission=off  # the dev stack, so set

Needs root (namespaces), flux-core 0.88 installed (MC_FLUX_PREFIX, default /opt/flux:
tests/kubelet/image.py) and the real engines. With --real-node, the pods run on the real node
(tests/engines/node.py) of a control plane that runs already: MC_CONTROL_PLANE and MC_NODE name them,
as `.ci/run` sets them.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from flux_minicluster.builders.files import CURVE_CERT_KEY
from flux_minicluster.builders.keygen import keygen_pod
from flux_minicluster.config import stack_file
from tests.bench.job_clock import JobClock
from tests.bench.rendered import apply, kubectl, rendered
from tests.engines.control_plane import ControlPlane
from tests.harness import ROOT, example
from tests.realengine.node.stacks import StackOnRealNode
from tests.realengine.pulumi_stack import Stack, StackOnNode

PLAIN_PROGRAM = Path(__file__).with_name("plain_program.py")


class Run:
    """One namespace and one stack of it on the control plane, closed after the run."""

    real_node = False
    """The pods on the real node (real containers), not on a test kubelet's Node."""

    def __init__(self, plane: ControlPlane, admin: client.ApiClient, tmp: Path, name: str, stack: dict[str, Any]):
        self.namespace = f"bench-{secrets.token_hex(4)}"
        client.CoreV1Api(admin).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=self.namespace)))
        where = StackOnRealNode if self.real_node else StackOnNode
        self.cluster = where(admin, plane, self.namespace, tmp / self.namespace, name, dict(stack))
        self.plane, self.admin = plane, admin

    def apply_rendered(self) -> None:
        """render.py's objects for the stack file `pulumi up` reads, applied, then the Job's completion."""
        stack = self.cluster.stack
        apply(self.plane, rendered(stack.project / f"Pulumi.{stack.name}.yaml"), stack.directory)
        kubectl(self.plane, "wait", "-n", self.namespace, "--for=condition=complete", "--timeout=300s", "job/dev")

    def plain_program(self, keygen: bool = False) -> Stack:
        """A stack of plain_program.py, with render.py's objects for the stack file `pulumi up` reads;
        with `keygen`, the certificate from the stack's keygen pod, as early as a program can run it."""
        stack = self.cluster.stack
        project = stack.directory.parent / "plain"
        project.mkdir()
        runtime = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["runtime"]  # the project's venv and toolchain
        (project / "Pulumi.yaml").write_text(yaml.safe_dump({"name": "plain", "runtime": runtime}))
        (project / "__main__.py").write_text(PLAIN_PROGRAM.read_text())
        (project / "venv").symlink_to(Path(sys.prefix))
        stack_path = stack.project / f"Pulumi.{stack.name}.yaml"
        (project / "objects.yaml").write_text(rendered(stack_path))
        if keygen:
            spec = stack_file.load(stack_path)[0]
            pod = {"pod": keygen_pod(spec), "timeout": spec.keygen_timeout, "secretKey": CURVE_CERT_KEY}
            (project / "keygen-pod.json").write_text(json.dumps(pod))
        return Stack(self.plane, stack.directory.parent / "plain-stack", "dev", {}, project=project)

    def timed_apart(self, step: Callable[[], object], adds: list[float]) -> float:
        """The step's seconds; to `adds`, what the step adds to the dev Job's own run (created to complete,
        as a watch sees it), the part of a step that the pods' run-to-run noise leaves out."""
        with JobClock(self.admin, self.namespace, "dev") as job:
            took = timed(step)
        adds.append(took - job.run)
        return took

    def close(self) -> None:
        self.cluster.close()
        client.CoreV1Api(self.admin).delete_namespace(self.namespace)


def timed(step: Callable[[], object]) -> float:
    started = time.monotonic()
    step()
    return time.monotonic() - started


def measure(
    plane: ControlPlane, admin: client.ApiClient, tmp: Path, runs: int, dev: dict[str, Any]
) -> dict[str, list[float]]:
    """`dev`: the dev stack's config, for `pulumi up`, `kubectl apply` and the plain program alike."""
    ways = ["up", "apply", "plain", "keygen"]
    named = (*ways, "persistent", "destroy", "destroy-p", *(f"{way}-adds" for way in ways))
    times: dict[str, list[float]] = {name: [] for name in named}
    for index in range(runs):
        first = index % len(ways)
        for kind in [*ways[first:], *ways[:first], "persistent"]:  # each way first in turn
            stack = example("interactive") if kind == "persistent" else dev
            run = Run(plane, admin, tmp, "interactive" if kind == "persistent" else "dev", stack)
            try:
                if kind == "apply":
                    times["apply"].append(run.timed_apart(run.apply_rendered, times["apply-adds"]))
                    continue
                if kind in ("plain", "keygen"):
                    plain = run.plain_program(keygen=kind == "keygen")
                    times[kind].append(run.timed_apart(plain.up, times[f"{kind}-adds"]))
                    plain.destroy()
                    continue
                if kind == "up":
                    times["up"].append(run.timed_apart(run.cluster.stack.up, times["up-adds"]))
                else:
                    times[kind].append(timed(run.cluster.stack.up))
                times["destroy" if kind == "up" else "destroy-p"].append(timed(run.cluster.stack.destroy))
                assert run.cluster.left() == {}, run.cluster.left()
            finally:
                run.close()
        print(f"run {index + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items() if v), flush=True)
    return times


def table(times: dict[str, list[float]]) -> str:
    median = {name: statistics.median(values) for name, values in times.items()}
    rows: list[tuple[str, float, float | None, bool]] = [
        ("dev: `pulumi up` until the Job completes", median["up"], median["apply"], True),
        ("dev: the plainest Pulumi program of the same objects", median["plain"], median["apply"], True),
        ("dev: what `pulumi up` adds to the Job's own run", median["up-adds"], median["apply-adds"], False),
        ("dev: what the plain program adds to the Job's own run", median["plain-adds"], median["apply-adds"], False),
        ("dev: the plain program with a keygen pod", median["keygen"], median["apply"], True),
        ("dev: what that program adds to the Job's own run", median["keygen-adds"], median["apply-adds"], False),
        ("dev: `pulumi destroy` until nothing is left", median["destroy"], None, False),
        ("interactive: `pulumi up` until every broker runs", median["persistent"], None, False),
        ("interactive: `pulumi destroy` until nothing is left", median["destroy-p"], None, False),
    ]  # fmt: skip
    lines = [
        "| what | runs | Pulumi (s) | `kubectl apply` + `kubectl wait` (s) | ratio |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for what, pulumi_s, kubectl_s, ratio in rows:
        against = "" if kubectl_s is None else f"{kubectl_s:.2f}"
        compared = f"{pulumi_s / kubectl_s:.2f}" if kubectl_s is not None and ratio else ""
        lines.append(f"| {what} | {len(times['up'])} | {pulumi_s:.2f} | {against} | {compared} |")
    return "\n".join(lines)


def setting(pair: str) -> tuple[str, Any]:
    """KEY=VALUE, the key without `minicluster:`; the value a string, or a number if it is one."""
    key, _, value = pair.partition("=")
    return key, int(value) if value.isdigit() else value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--real-node", action="store_true", help="on the real node of MC_CONTROL_PLANE, MC_NODE")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a key of the dev stack")
    args = parser.parse_args()
    dev = {**example("dev"), **dict(setting(pair) for pair in args.set)}
    if args.set:
        print(f"the dev stack with {', '.join(args.set)}", flush=True)
    if args.real_node:
        Run.real_node = True
        plane = ControlPlane.attach(Path(os.environ["MC_CONTROL_PLANE"]))
        admin = config.new_client_from_config(str(plane.kubeconfig))  # type: ignore[no-untyped-call]
        with tempfile.TemporaryDirectory() as directory:
            print(table(measure(plane, admin, Path(directory), args.runs, dev)))
        return
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        plane = ControlPlane(tmp / "plane")
        try:
            admin = config.new_client_from_config(str(plane.kubeconfig))  # type: ignore[no-untyped-call]
            print(table(measure(plane, admin, tmp, args.runs, dev)))
        finally:
            plane.stop()


if __name__ == "__main__":
    main()
