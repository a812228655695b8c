"""GPUs in Flux's resource set on real Flux: each pod's own GPU ids (MC_GPU_IDS, as the device plugin
gives them) whatever hwloc sees, and tasks bound to them (tests/kubelet runs the pods; the GPUs are
ids only: no task here touches a device)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.kubelet.pod import wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
Make = Callable[..., Kubelet]


def test_flux_lists_every_pods_gpus_beside_its_cores(minicluster: Make) -> None:
    cluster = minicluster(size=2, command=None, gpus=2)
    rank0, worker = cluster.start_all()
    wait_until(lambda: rank0.ready() and worker.ready(), "the brokers to be ready", 30)
    assert rank0.flux("resource", "list", "-s", "free", "-no", "{nnodes} {ngpus}").split() == ["2", "4"]
    assert rank0.exec("sh", "-c", "flux R decode --short < /var/lib/minicluster/R").stdout.strip().endswith(",gpu[0-1]")


def test_a_task_with_gpus_per_task_is_placed_on_a_gpu_and_told_which(minicluster: Make) -> None:
    cluster = minicluster(size=2, tasks=2, gpus=1, gpusPerTask=1, command="printenv CUDA_VISIBLE_DEVICES")
    pods = cluster.start_all()
    assert [pod.wait(timeout=60) for pod in pods] == [0, 0]
    assert [line for line in pods[0].log.splitlines() if line == "0"] == ["0", "0"]  # one GPU, id 0, per task
