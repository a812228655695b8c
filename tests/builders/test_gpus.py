"""GPUs (issue 21): in Flux's resource set as the pod's own, asked of Kubernetes, and per task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from flux_minicluster.builders import manifests
from flux_minicluster.cluster import admission
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.harness import OWNER, ROOT, deploy, refused_problems
from tests.kube_api import Cluster
from tests.kube_api.samples import FOUR, node
from tests.pods import Pods

Json = dict[str, Any]


def flux_container(**overrides: Any) -> Json:
    job = deploy(config(**overrides)).one("kubernetes:batch/v1:Job")
    container: Json = job.inputs["spec"]["template"]["spec"]["containers"][0]
    return container


def env(container: Json) -> dict[str, str]:
    return {item["name"]: item.get("value", "") for item in container["env"]}


def test_gpus_are_asked_of_kubernetes_in_the_flux_containers_limits() -> None:
    container = flux_container(gpus=2, resources={"limits": {"memory": "8Gi"}})
    assert container["resources"]["limits"] == {"memory": "8Gi", "nvidia.com/gpu": "2"}
    assert env(container)["MC_GPU_IDS"] == "0-1"


def test_gpus_are_taken_from_the_limits_of_a_gpu_resource() -> None:
    container = flux_container(resources={"limits": {"amd.com/gpu": 1}})
    assert container["resources"]["limits"] == {"amd.com/gpu": "1"}
    assert env(container)["MC_GPU_IDS"] == "0"


def test_a_named_gpu_resource_is_used_for_the_limit() -> None:
    container = flux_container(gpus=4, gpuResource="gpu.intel.com/i915")
    assert container["resources"]["limits"] == {"gpu.intel.com/i915": "4"}


def test_no_gpus_means_hwloc_alone_describes_the_node() -> None:
    assert env(flux_container())["MC_GPU_IDS"] == ""


def test_gpus_per_task_go_to_flux_submit() -> None:
    spec = load_spec({f"minicluster:{k}": v for k, v in config(gpus=1, tasks=4, gpusPerTask=1).items()}, "dev")
    assert manifests.run_config_files(spec)["submit.flags"] == "-g1\n"


def test_rank0_submits_the_command_with_gpus_per_task(tmp_path: Path) -> None:
    run = Pods(tmp_path, gpus=2, tasks=8, gpusPerTask=1).run(0)
    assert run.start[-7:] == ["flux", "submit", "--watch", "-N4", "-n8", "-g1", "hostname"]


def test_a_pod_whose_resource_set_cannot_be_written_stops_before_its_broker(tmp_path: Path) -> None:
    run = Pods(tmp_path, gpus=1).run(0, STANDIN_EXITS_R="1")
    assert run.status == 1
    assert "flux R encode failed" in run.stderr
    assert run.subcommand("start") == []


def test_the_admission_check_counts_gpus_like_any_extended_resource(kube_api: Cluster) -> None:
    kube_api.nodes = [node("gpu-1"), *FOUR[1:]]
    kube_api.nodes[0]["status"]["allocatable"]["nvidia.com/gpu"] = "8"
    raw = config(admission="refuse", gpus=4)
    found = admission.check(load_spec({f"minicluster:{k}": v for k, v in raw.items()}, "dev"), Access(), OWNER)
    assert found.refused is not None
    assert "the 4 usable nodes have room for 2; each broker needs memory 1Gi (for its /dev/shm: " in found.refused
    assert "nvidia.com/gpu 4; no room for one: nvidia.com/gpu on 3" in found.refused


REFUSED = [
    ("fractional", {"gpus": 1.5}, "minicluster:gpus: must be a whole number (got 1.5)"),
    ("negative", {"gpus": -1}, "minicluster:gpus: Input should be greater than or equal to 0"),
    ("resource-not-extended", {"gpus": 1, "gpuResource": "gpu"},
     "minicluster:gpuResource: must be an extended resource name like nvidia.com/gpu"),
    ("resource-of-kubernetes", {"gpus": 1, "gpuResource": "kubernetes.io/gpu"},
     "minicluster:gpuResource: must be an extended resource name like nvidia.com/gpu"),
    ("on-a-sidecar", {"containers": [{"name": "s", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
     "minicluster:containers[0].resources asks for nvidia.com/gpu: only the Flux container's GPUs"),
    ("count-disagrees-with-limits", {"gpus": 2, "resources": {"limits": {"nvidia.com/gpu": 1}}},
     "minicluster:gpus (2) differs from minicluster:resources.limits.nvidia.com/gpu (1): set one of them"),
    ("two-gpu-resources", {"resources": {"limits": {"nvidia.com/gpu": 1, "amd.com/gpu": 1}}},
     "minicluster:resources.limits names 2 GPU resources (amd.com/gpu, nvidia.com/gpu): set minicluster:gpuResource"),
    ("per-task-without-gpus", {"gpusPerTask": 1}, "minicluster:gpusPerTask needs GPUs"),
    ("per-task-over-the-cluster", {"gpus": 1, "tasks": 8, "gpusPerTask": 1},
     "minicluster:gpusPerTask (1) times minicluster:tasks (8) is 8 GPUs, and the cluster has 4"),
    ("per-task-over-a-node", {"gpus": 2, "gpusPerTask": 3}, "minicluster:gpusPerTask (3) is more than one broker has"),
    ("per-task-without-a-command", {"gpus": 1, "gpusPerTask": 1, "command": None},
     "minicluster:gpusPerTask goes to the `flux submit` of minicluster:command"),
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "expected"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_bad_gpu_input_is_refused_naming_the_key(overrides: Json, expected: str) -> None:
    problems = refused_problems(config(**overrides))
    assert any(problem.startswith(expected) for problem in problems), problems


def test_the_gpu_example_lists_every_ranks_gpu_through_flux() -> None:
    stack = yaml.safe_load((ROOT / "Pulumi.gpu.yaml").read_text())["config"]
    spec = load_spec(stack, "gpu")
    assert (spec.command, spec.tasks, spec.gpus_per_task, spec.broker_gpus) == ("nvidia-smi -L", spec.size, 1, 1)
    assert manifests.run_config_files(spec)["submit.flags"].splitlines()[0] == "-g1"
