"""Gang scheduling (issue 21): a PodGroup with minMember = size, accepted by the published schema of its
project's CRD, before the Job in the graph, and pods marked as each scheduler finds them."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.builders import manifests
from flux_minicluster.cluster import admission
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config import certificate, stack_file
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.conftest import config
from tests.harness import OWNER, ROOT, deploy, refused_problems
from tests.kube_api import Cluster
from tests.kube_api.samples import FOUR
from tests.schemas import crd_problems

Json = dict[str, Any]
POD_GROUP = "kubernetes:scheduling.x-k8s.io/v1alpha1:PodGroup"


def spec_of(**overrides: Any) -> MiniClusterSpec:
    return load_spec({f"minicluster:{k}": v for k, v in config(**overrides).items()}, "dev")


def objects(spec: MiniClusterSpec) -> dict[str, Json]:
    return {obj["kind"]: obj for obj in manifests.all_objects(spec, certificate.generate(spec.rank0_host).text())}


def example(name: str) -> MiniClusterSpec:
    spec, _ = stack_file.load(ROOT / f"Pulumi.{name}.yaml")
    return spec


def test_the_coscheduling_example_makes_one_gang_of_its_brokers() -> None:
    rendered = objects(example("coscheduling"))
    group, template = rendered["PodGroup"], rendered["Job"]["spec"]["template"]
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["spec"] == {"minMember": 4, "scheduleTimeoutSeconds": 180}
    assert crd_problems(group) == []
    assert (
        template["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == group["metadata"]["name"] == "coscheduling"
    )
    assert template["spec"]["schedulerName"] == "scheduler-plugins-scheduler"


def test_the_volcano_example_makes_one_gang_of_its_brokers() -> None:
    rendered = objects(example("volcano"))
    group, template = rendered["PodGroup"], rendered["Job"]["spec"]["template"]
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["spec"] == {"minMember": 4, "queue": "default"}
    assert crd_problems(group) == []
    assert template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "volcano"
    assert template["spec"]["schedulerName"] == "volcano"


def test_the_crd_schemas_refuse_what_their_api_servers_refuse() -> None:
    group = objects(example("volcano"))["PodGroup"]
    assert crd_problems({**group, "spec": {"minMember": "4"}}) == ["'4' is not of type 'integer'"]
    assert crd_problems({**group, "spec": {"minMembers": 4}}) != []


def test_min_member_is_the_size_and_a_named_scheduler_is_used() -> None:
    spec = spec_of(command=None, size=6, maxSize=10, scheduler={"gang": "coscheduling", "name": "default-scheduler"})
    rendered = objects(spec)
    assert rendered["PodGroup"]["spec"]["minMember"] == 6
    assert rendered["Job"]["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"


def test_the_pod_group_comes_before_the_job_in_the_graph_and_follows_a_resize() -> None:
    for size in (4, 7):
        deployment = deploy(config(command=None, size=size, maxSize=8, scheduler={"gang": "volcano"}))
        (group,) = [r for r in deployment.resources if r.name == "dev-pod-group"]
        assert (group.inputs["kind"], group.inputs["spec"]["minMember"]) == ("PodGroup", size)
        assert deployment.urn(group) in deployment.options["dev-job"]["dependencies"]
        template = deployment.one("kubernetes:batch/v1:Job").inputs["spec"]["template"]
        assert template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "dev"


def test_without_a_gang_there_is_no_pod_group() -> None:
    assert "PodGroup" not in objects(spec_of())
    assert all(r.name != "dev-pod-group" for r in deploy(config()).resources)


REFUSED = [
    ("unknown-gang", {"scheduler": {"gang": "yunikorn"}}, "minicluster:scheduler.gang: Input should be 'coscheduling' or 'volcano'"),
    ("two-scheduler-names", {"scheduler": {"gang": "volcano"}, "pod": {"schedulerName": "volcano"}},
     "minicluster:pod.schedulerName and minicluster:scheduler both name the scheduler"),
    ("queue-without-volcano", {"scheduler": {"gang": "coscheduling", "queue": "hpc"}},
     "minicluster:scheduler.queue is a Volcano queue: for scheduler.gang volcano"),
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "expected"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_bad_gang_input_is_refused_naming_the_key(overrides: Json, expected: str) -> None:
    problems = refused_problems(config(**overrides))
    assert any(problem.startswith(expected) for problem in problems), problems


def test_the_admission_check_says_that_the_gang_waits_for_room_for_all(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    kube_api.crds.add("scheduling.volcano.sh/v1beta1/podgroups")
    found = admission.check(
        spec_of(admission="refuse", size=40, scheduler={"gang": "volcano"}, resources={"requests": {"cpu": "2"}}),
        Access(),
        OWNER,
    )
    assert found.refused is not None
    assert (
        "The volcano gang scheduler places all 40 brokers at once or none: none starts until there is room for every one."
        in found.refused
    )
