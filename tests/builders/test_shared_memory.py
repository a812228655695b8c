"""minicluster:sharedMemory: every broker pod's /dev/shm is a memory-backed emptyDir of that size (1Gi
by default) instead of the container runtime's 64 MiB; none leaves the runtime's; a volume of the user's
at /dev/shm takes the place of the default. The admission check counts it as memory each pod needs.
Its size inside a real container: tests/realengine/node/test_interactive.py."""

from __future__ import annotations

from typing import Any

from flux_minicluster.cluster import admission
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.harness import OWNER, deploy, refused_problems
from tests.kube_api import Cluster
from tests.kube_api.samples import node

Json = dict[str, Any]
MEMORY_SHM = {"medium": "Memory"}


def broker(pod: Json) -> Json:
    return next(c for c in pod["containers"] if c["name"] == "flux-broker")


def pod_of(**overrides: Any) -> Json:
    job = deploy(config(**overrides)).one("kubernetes:batch/v1:Job")
    spec: Json = job.inputs["spec"]["template"]["spec"]
    return spec


def shm_volumes(pod: Json) -> list[Json]:
    mounted = {m["name"] for m in broker(pod)["volumeMounts"] if m["mountPath"] == "/dev/shm"}
    return [volume for volume in pod["volumes"] if volume["name"] in mounted]


def test_by_default_the_broker_gets_a_memory_backed_dev_shm_of_1gi() -> None:
    assert shm_volumes(pod_of()) == [{"name": "shared-memory", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]


def test_its_size_is_the_config_key() -> None:
    assert shm_volumes(pod_of(sharedMemory="8Gi"))[0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "8Gi"}


def test_none_leaves_the_runtimes_own_dev_shm() -> None:
    pod = pod_of(sharedMemory="none")
    assert shm_volumes(pod) == []
    assert "shared-memory" not in [volume["name"] for volume in pod["volumes"]]


def test_a_volume_of_the_users_at_dev_shm_takes_the_defaults_place() -> None:
    theirs = {"path": "/dev/shm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}
    assert shm_volumes(pod_of(volumes={"shm": theirs})) == [{"name": "shm", "emptyDir": theirs["emptyDir"]}]


def test_the_key_and_a_users_volume_at_dev_shm_together_are_refused_by_key() -> None:
    theirs = {"path": "/dev/shm", "emptyDir": {"medium": "Memory"}}
    assert refused_problems(config(sharedMemory="2Gi", volumes={"shm": theirs})) == [
        "minicluster:volumes.shm is mounted at /dev/shm, where minicluster:sharedMemory puts the pods' "
        "memory-backed /dev/shm: set sharedMemory to none to use your own volume there"
    ]


def test_more_than_the_flux_containers_memory_limit_is_refused_by_key() -> None:
    problems = refused_problems(config(sharedMemory="4Gi", resources={"limits": {"memory": "2Gi"}}))
    assert problems == [
        "minicluster:sharedMemory 4Gi is more than the Flux container's memory limit "
        "(minicluster:resources.limits.memory 2Gi), which what /dev/shm holds counts against"
    ]


def test_the_default_under_a_smaller_memory_limit_is_left_to_kubernetes_which_caps_it() -> None:
    pod = pod_of(resources={"limits": {"memory": "512Mi"}})
    assert shm_volumes(pod)[0]["emptyDir"]["sizeLimit"] == "1Gi"


def test_a_size_that_is_no_quantity_is_refused_by_key() -> None:
    (problem,) = refused_problems(config(sharedMemory="lots"))
    assert problem.startswith("minicluster:sharedMemory: ")
    assert "'lots' is not a Kubernetes quantity" in problem


def test_zero_is_refused_by_key() -> None:
    (problem,) = refused_problems(config(sharedMemory="0"))
    assert problem.startswith("minicluster:sharedMemory: ")
    assert "no room" in problem


def check(kube_api: Cluster, memory: str, **overrides: Any) -> admission.Verdict:
    kube_api.nodes = [node(f"node-{i}") for i in range(4)]
    for each in kube_api.nodes:
        each["status"]["allocatable"]["memory"] = memory
    raw = config(admission="refuse", **overrides)
    return admission.check(load_spec({f"minicluster:{k}": v for k, v in raw.items()}, "dev"), Access(), OWNER)


def test_the_admission_check_refuses_nodes_without_memory_for_the_dev_shm(kube_api: Cluster) -> None:
    refused = check(kube_api, "768Mi").refused
    assert refused is not None
    assert "each broker needs memory 1Gi (for its /dev/shm: minicluster:sharedMemory)" in refused
    assert "no room for one: memory on 4" in refused


def test_without_its_own_dev_shm_the_same_nodes_fit(kube_api: Cluster) -> None:
    assert check(kube_api, "768Mi", sharedMemory="none").refused is None


def test_a_request_larger_than_the_dev_shm_is_what_counts(kube_api: Cluster) -> None:
    refused = check(kube_api, "3Gi", resources={"requests": {"memory": "4Gi"}}).refused
    assert refused is not None
    assert "each broker requests memory 4Gi; no room for one: memory on 4" in refused
