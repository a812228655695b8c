"""The admission check (issue 12): the real client reads the local API stand-in's nodes, pods, quotas
and limit ranges; each situation gives its exact message. Then the program on mocks: refuse creates
nothing, warn goes ahead, off and Kueue read nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from flux_minicluster.cluster import admission
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.harness import OWNER, deploy, deploy_rejected
from tests.kube_api import Cluster, refused_url, running, write_kubeconfig
from tests.kube_api.samples import FOUR, node

Json = dict[str, Any]
REQUESTS = {"requests": {"cpu": "2", "memory": "4Gi"}}


def pod_on(node_name: str, cpu: str, index: int = 0, namespace: str = "other", labels: Json | None = None) -> Json:
    return {
        "metadata": {"name": f"busy-{node_name}-{index}", "namespace": namespace, "labels": labels or {}},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]},
        "status": running("c"),
    }  # fmt: skip


def quota(hard: Json, used: Json | None = None) -> Json:
    return {"metadata": {"name": "compute", "namespace": "default"}, "spec": {"hard": hard},
            "status": {"hard": hard, "used": used or {}}}  # fmt: skip


def limit_range(**limits: Json) -> Json:
    return {
        "metadata": {"name": "limits", "namespace": "default"},
        "spec": {"limits": [{"type": "Container", **limits}]},
    }


@dataclass
class Case:
    id: str
    nodes: list[Json]
    expected: list[str]
    overrides: Json = field(default_factory=dict)
    pods: list[Json] = field(default_factory=list)
    quotas: list[Json] = field(default_factory=list)
    limit_ranges: list[Json] = field(default_factory=list)


HPC = [node(f"hpc-{i}", labels={"pool": "hpc"}, cordoned=i == 0) for i in range(5)] + [
    node(f"web-{i}", labels={"pool": "web"}) for i in range(7)
]
OWN = {"app.kubernetes.io/name": "minicluster", "app.kubernetes.io/instance": "dev"}
TAINT = {"key": "dedicated", "value": "flux", "effect": "NoSchedule"}


def zone(name: str) -> Json:
    return {"topology.kubernetes.io/zone": name}


NOT_IN_ZONE_A = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["a"]}]}]}}}  # fmt: skip

CASES = [
    Case("fits", FOUR, [], {"resources": REQUESTS}),
    Case("one-pod-per-node-short-of-matching-nodes", HPC,
         ["size 8 with onePodPerNode needs 8 nodes; 5 of 12 nodes match nodeSelector pool=hpc; 1 of them is cordoned; "
          "4 of the 4 usable can take a broker"],
         {"size": 8, "pod": {"onePodPerNode": True, "nodeSelector": {"pool": "hpc"}}}),
    Case("requests-larger-than-any-node", FOUR,
         ["size 4 needs room for 4 pods; the cluster has 4 nodes; the 4 usable nodes have room for 0; "
          "each broker requests cpu 16, memory 4Gi; no room for one: cpu on 4"],
         {"resources": {"requests": {"cpu": "16", "memory": "4Gi"}}}),
    Case("other-pods-take-the-room", FOUR,
         ["size 4 needs room for 4 pods; the cluster has 4 nodes; the 4 usable nodes have room for 0; "
          "each broker requests cpu 2, memory 4Gi; no room for one: cpu on 4"],
         {"resources": REQUESTS}, pods=[pod_on(n["metadata"]["name"], "7") for n in FOUR]),
    Case("its-own-pods-do-not-count-again", FOUR, [], {"resources": REQUESTS},
         pods=[pod_on(n["metadata"]["name"], "8", namespace="default", labels=OWN) for n in FOUR]),
    Case("pod-slots-full", [node(f"node-{i}", pods="2") for i in range(1, 5)],
         ["size 4 needs room for 4 pods; the cluster has 4 nodes; the 4 usable nodes have room for 0; "
          "each broker requests cpu 2, memory 4Gi; no room for one: pod slots on 4"],
         {"resources": REQUESTS}, pods=[pod_on(f"node-{i}", "0", k) for i in range(1, 5) for k in range(2)]),
    Case("gpus-nowhere", FOUR,
         ["size 4 needs room for 4 pods; the cluster has 4 nodes; the 4 usable nodes have room for 0; "
          "each broker requests cpu 2, memory 4Gi, nvidia.com/gpu 1; no room for one: nvidia.com/gpu on 4"],
         {"resources": {**REQUESTS, "limits": {"nvidia.com/gpu": 1}}}),
    Case("taints-not-tolerated", [node(f"node-{i}", taints=[TAINT]) for i in range(1, 5)],
         ["size 4 needs room for 4 pods; the cluster has 4 nodes; 4 of them are tainted where the pods have no "
          "toleration; the 0 usable nodes have room for 0"]),
    Case("taints-tolerated", [node(f"node-{i}", taints=[TAINT]) for i in range(1, 5)], [],
         {"pod": {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "flux", "effect": "NoSchedule"}]}}),
    Case("nodes-not-ready", [node("node-1"), *(node(f"node-{i}", ready=False) for i in range(2, 5))],
         ["size 4 needs room for 4 pods; the cluster has 4 nodes; 3 of them are not Ready; "
          "the 1 usable node has room for 2"],
         {"resources": {"requests": {"cpu": "4"}}}),
    Case("node-selector-matches-nothing", FOUR,
         ["size 4 needs room for 4 pods; 0 of 4 nodes match nodeSelector pool=gpu; the 0 usable nodes have room for 0"],
         {"pod": {"nodeSelector": {"pool": "gpu"}}}),
    Case("required-node-affinity", [node("a-1", labels=zone("a")), node("a-2", labels=zone("a")),
                                    node("a-3", labels=zone("a")), node("b-1", labels=zone("b"))],
         ["size 4 needs room for 4 pods; 1 of 4 nodes match the required node affinity; "
          "the 1 usable node has room for 2"],
         {"pod": {"affinity": NOT_IN_ZONE_A}, "resources": {"requests": {"cpu": "4"}}}),
    Case("quota-on-pods", FOUR, ["ResourceQuota compute allows 3 of pods in namespace default; other pods use 1, "
                                 "and 4 brokers need 4"], quotas=[quota({"pods": "3"}, {"pods": "1"})]),
    Case("the-keeper-counts-against-the-quota", FOUR, ["ResourceQuota compute allows 5 of pods in namespace default; "
                                                       "other pods use 1, and 4 brokers and the keeper need 5"],
         {"keeper": {"enabled": True}}, quotas=[quota({"pods": "5"}, {"pods": "1"})]),
    Case("the-same-quota-without-the-keeper", FOUR, [], quotas=[quota({"pods": "5"}, {"pods": "1"})]),
    Case("the-keeper-takes-a-brokers-room", FOUR,
         ["size 4 needs room for 4 pods; the cluster has 4 nodes; the 4 usable nodes have room for 3; "
          "the keeper's pod takes the room of 1 broker"],
         {"keeper": {"enabled": True}, "resources": {"requests": {"cpu": "8"}}}),
    Case("the-keeper-fits-nowhere", FOUR,
         ["the keeper's pod (requests cpu 10m, memory 32Mi) fits on none of the cluster's 4 nodes"],
         {"keeper": {"enabled": True}}, pods=[pod_on(n["metadata"]["name"], "8") for n in FOUR]),
    Case("quota-on-cpu-needs-requests", FOUR,
         ["namespace default refuses even one broker pod: failed quota: compute: must specify requests.cpu "
          "(minicluster:resources sets the Flux container's requests and limits; each sidecar has its own)"],
         quotas=[quota({"requests.cpu": "10"})]),
    Case("limit-range-defaults-count-against-the-quota", FOUR,
         ["ResourceQuota compute allows 3 of requests.cpu in namespace default; other pods use 0, and 4 brokers need 4"],
         quotas=[quota({"requests.cpu": "3"})], limit_ranges=[limit_range(defaultRequest={"cpu": "1"})]),
    Case("limit-range-max", FOUR,
         ["namespace default refuses even one broker pod: maximum cpu usage per Container is 1, but limit is 2 "
          "(minicluster:resources sets the Flux container's requests and limits; each sidecar has its own)"],
         {"resources": {"limits": {"cpu": "2"}}}, limit_ranges=[limit_range(max={"cpu": "1"})]),
    Case("limit-range-max-without-a-limit", FOUR,
         ["namespace default refuses even one broker pod: maximum cpu usage per Container is 1.  No limit is "
          "specified (minicluster:resources sets the Flux container's requests and limits; each sidecar has its own)"],
         {"resources": REQUESTS}, limit_ranges=[limit_range(max={"cpu": "1"})]),
]  # fmt: skip


def arrange(api: Cluster, case: Case) -> None:
    api.nodes = case.nodes
    for pod in case.pods:
        api.add_pod(pod)
    api.quotas, api.limit_ranges = case.quotas, case.limit_ranges


def verdict(**overrides: Any) -> admission.Verdict:
    raw = config(**{"admission": "refuse", **overrides})
    spec = load_spec({f"minicluster:{k}": v for k, v in raw.items()}, "dev")
    return admission.check(spec, Access(), OWNER)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_situations(kube_api: Cluster, case: Case) -> None:
    arrange(kube_api, case)
    found = verdict(**case.overrides)
    said = (found.refused or "").splitlines()[1:-1]
    assert [line.removeprefix("  - ") for line in said] == case.expected


def test_a_misfit_is_a_warning_by_default(kube_api: Cluster) -> None:
    arrange(kube_api, CASES[2])
    spec = load_spec({f"minicluster:{k}": v for k, v in config(**CASES[2].overrides).items()}, "dev")
    found = admission.check(spec, Access(), OWNER)
    assert found.refused is None
    (warning,) = found.warnings
    assert warning.startswith("MiniCluster 'dev' does not fit the cluster as it is:\n  - size 4 needs room for 4 pods")
    assert warning.endswith("Going ahead (minicluster:admission is warn): a cluster autoscaler may add room.")


def test_nodes_and_pods_are_read_in_pages(kube_api: Cluster) -> None:
    kube_api.nodes = [node(f"node-{i}") for i in range(1200)]
    assert verdict() == admission.Verdict()
    reads = [path for method, path, _ in kube_api.requests if path == "/api/v1/nodes"]
    assert len(reads) == 3  # 500 + 500 + 200


def test_a_check_that_may_not_read_the_quotas_says_so_and_goes_ahead(kube_api: Cluster) -> None:
    denied = 'resourcequotas is forbidden: User "dev" cannot list resource "resourcequotas"'
    kube_api.fail("GET", "/resourcequotas$", 403, denied)
    found = verdict()
    assert found.refused is None
    assert found.warnings == [
        f"admission check skipped: access denied (403: {denied}) while reading the cluster's room in namespace "
        "'default': this needs list on nodes, pods and resourcequotas, and create on pods (a dry run) there (check "
        "your RBAC)"
    ]


NODES_DENIED = 'nodes is forbidden: User "dev" cannot list resource "nodes" in API group "" at the cluster scope'


def test_a_user_of_one_namespace_is_told_the_nodes_room_was_not_judged(kube_api: Cluster) -> None:
    """No right to list nodes (a user of one namespace has none): the rest of the check still runs."""
    kube_api.fail("GET", "/api/v1/nodes$", 403, NODES_DENIED)
    found = verdict()
    assert found.refused is None
    assert found.warnings == [
        "admission check of the nodes' room skipped (the namespace's quotas were checked): access denied (403: "
        f"{NODES_DENIED}) while reading the nodes and every namespace's pods: this needs list on nodes and pods at "
        "the cluster scope (check your RBAC)"
    ]


def test_a_user_of_one_namespace_still_has_the_namespaces_quotas_judged(kube_api: Cluster) -> None:
    """Against the pods of the namespace: its own list, as the cluster's may not be read either."""
    kube_api.fail("GET", "/api/v1/pods$", 403, 'pods is forbidden: User "dev" cannot list resource "pods"')
    kube_api.quotas = [quota({"pods": "3"}, {"pods": "1"})]
    refused = (verdict().refused or "").splitlines()
    assert refused[1:-1] == [
        "  - ResourceQuota compute allows 3 of pods in namespace default; other pods use 1, and 4 brokers need 4"
    ]
    assert "/api/v1/namespaces/default/pods" in [path for method, path, _ in kube_api.requests if method == "GET"]


def test_off_asks_the_cluster_nothing(kube_api: Cluster) -> None:
    assert verdict(admission="off") == admission.Verdict()
    assert kube_api.requests == []


def test_with_kueue_the_room_is_kueues_to_judge_and_nothing_is_read(kube_api: Cluster) -> None:
    kueue = verdict(jobLabels={"kueue.x-k8s.io/queue-name": "hpc"}, suspend=True)
    assert kueue.warnings == ["admission: left to Kueue (queue 'hpc'), which admits the Job when there is room"]
    assert [(method, path) for method, path, _ in kube_api.requests if method == "GET"] == []


def test_with_kueue_what_the_api_server_refuses_still_stops_pulumi_up(kube_api: Cluster) -> None:
    """A Job that Kueue admits later is refused at its create all the same (a webhook, a name another
    stack holds): the dry run still runs."""
    kube_api.webhooks.append(lambda obj: "jobs need the label team" if obj["kind"] == "Job" else None)
    kueue = verdict(jobLabels={"kueue.x-k8s.io/queue-name": "hpc"}, suspend=True)
    assert kueue.refused is not None
    assert (
        "  - the Job 'dev': admission webhook \"policy.example.com\" denied the request: jobs need the label team"
        in (kueue.refused)
    )


# -- in the program: before any resource ----------------------------------------------------------


def test_refuse_stops_pulumi_up_before_anything_is_created(kube_api: Cluster) -> None:
    arrange(kube_api, CASES[2])
    message, deployment = deploy_rejected(config(admission="refuse", **CASES[2].overrides))
    assert "MiniCluster 'dev' does not fit the cluster as it is:" in message
    assert "each broker requests cpu 16, memory 4Gi; no room for one: cpu on 4" in message
    assert "Nothing was created (minicluster:admission is refuse)." in message
    assert deployment.resources == []


def test_warn_goes_ahead(kube_api: Cluster) -> None:
    arrange(kube_api, CASES[2])
    assert "kubernetes:batch/v1:Job" in deploy(config(**CASES[2].overrides)).kinds


def test_one_broker_pod_goes_through_the_namespaces_admission_as_a_dry_run_and_nothing_is_stored(
    kube_api: Cluster,
) -> None:
    arrange(kube_api, CASES[0])
    assert verdict(resources=REQUESTS).refused is None
    sent = [body for method, path, body in kube_api.requests if method == "POST" and path.endswith("/pods")]
    brokers = [pod for pod in sent if pod and pod["metadata"].get("name") == "dev-admission"]
    assert len(brokers) == 2  # the admission policies' judgement (cluster/admission/dry_run.py), then the room's
    assert all([c["name"] for c in pod["spec"]["containers"]] == ["flux-broker"] for pod in brokers)  # the Job's own
    assert kube_api.pods == {}  # dryRun=All: the stand-in, as the API server, stores nothing


def test_a_webhook_that_cannot_dry_run_does_not_refuse_the_cluster(kube_api: Cluster) -> None:
    """The API server's answer when a webhook has side effects: the pod is judged as the Job builds it."""
    arrange(kube_api, CASES[0])
    kube_api.fail("POST", "/pods$", 400, 'admission webhook "audit.example.com" does not support dry run')
    found = verdict(resources=REQUESTS)
    assert (found.refused, found.warnings) == (None, [])


def test_an_autoscaled_cluster_without_room_for_max_size_is_told_so_and_never_refused(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR  # room for 16 brokers of 2 cpus
    found = verdict(command=None, size=1, maxSize=20, autoscale={"enabled": True}, resources=REQUESTS)
    assert found.refused is None
    (warning,) = found.warnings
    assert warning.startswith("MiniCluster 'dev' fits at size 1 but not at maxSize (20), which the autoscaler may "
                              "grow it to:\n  - size 20 needs room for 20 pods; the cluster has 4 nodes")  # fmt: skip
    assert warning.endswith("A grow that finds no room within scheduleTimeout (180s) is rolled back.")
    assert verdict(command=None, size=1, maxSize=16, autoscale={"enabled": True}, resources=REQUESTS).warnings == []


def test_a_cluster_that_cannot_be_reached_is_one_warning(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dry run found it so: the room is not read too, which would wait for the connection once more."""
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "config", {"gone": refused_url()})))
    (warning,) = verdict().warnings
    assert warning.startswith("admission check skipped: cannot reach the Kubernetes cluster (Connection refused) while")
