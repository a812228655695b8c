"""A MiniCluster as `kubectl apply` makes it, the benchmarks' baseline and set-up: render.py's objects
for a stack file (its certificate made locally, its Secrets' values shown), applied to a control plane."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.engines.control_plane import ControlPlane
from tests.engines.versions import KUBERNETES_BIN
from tests.harness import ROOT


def stack_file(folder: Path, keys: dict[str, Any], name: str = "bench") -> Path:
    """`Pulumi.<name>.yaml` in `folder`, with `keys` (without `minicluster:`) as its config."""
    path = folder / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": {f"minicluster:{key}": value for key, value in keys.items()}}))
    return path


def rendered(stack: Path) -> str:
    """The objects render.py prints (YAML documents) for the stack file `stack`."""
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "render.py"), "--config", str(stack), "--show-secrets"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


def kubectl(plane: ControlPlane, *args: str) -> None:
    argv = [str(KUBERNETES_BIN / "kubectl"), f"--kubeconfig={plane.kubeconfig}", *args]
    subprocess.run(argv, check=True, capture_output=True, timeout=300)


def apply(plane: ControlPlane, objects: str, folder: Path) -> None:
    """`kubectl apply` of `objects` (YAML documents), from a file in `folder`."""
    manifests = folder / "objects.yaml"
    manifests.write_text(objects)
    kubectl(plane, "apply", "-f", str(manifests))
