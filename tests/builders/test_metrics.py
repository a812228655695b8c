"""metrics: every broker pod serves /metrics (the pods' metrics.py, tested on real Flux in
tests/realflux/test_real_metrics.py); what the builders and the program make of the config: the port, the scrape
annotations, the Service's port and the Prometheus Operator's ServiceMonitor."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.builders import manifests
from flux_minicluster.cluster import admission
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config import certificate
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.conftest import config
from tests.harness import OWNER, deploy, refused_problems
from tests.kube_api import Cluster
from tests.kube_api.samples import FOUR
from tests.schemas import SUPPORTED, assert_conforms, crd_problems

Json = dict[str, Any]
ON = {"enabled": True}
MONITORED = {"enabled": True, "serviceMonitor": True}


def objects(**overrides: Any) -> dict[str, Json]:
    spec: MiniClusterSpec = load_spec({f"minicluster:{k}": v for k, v in config(**overrides).items()}, "dev")
    rendered = manifests.all_objects(spec, certificate.generate(spec.rank0_host).text())
    return {f"{obj['kind']}/{obj['metadata']['name']}": obj for obj in rendered}


def broker(rendered: dict[str, Json]) -> Json:
    return rendered["Job/dev"]["spec"]["template"]  # type: ignore[no-any-return]


def env(rendered: dict[str, Json]) -> dict[str, str]:
    return {item["name"]: item.get("value", "") for item in broker(rendered)["spec"]["containers"][0]["env"]}


def test_every_broker_pod_serves_metrics_on_its_port_and_says_so_to_prometheus() -> None:
    rendered = objects(metrics={**ON, "port": 9500})
    container = broker(rendered)["spec"]["containers"][0]
    assert {"name": "metrics", "containerPort": 9500, "protocol": "TCP"} in container["ports"]
    assert broker(rendered)["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true", "prometheus.io/port": "9500", "prometheus.io/path": "/metrics",
    }  # fmt: skip
    assert {"name": "metrics", "port": 9500, "targetPort": 9500, "protocol": "TCP"} in rendered["Service/dev"]["spec"][
        "ports"
    ]
    assert (env(rendered)["MC_METRICS_PORT"], env(rendered)["MC_METRICS_CACHE"]) == ("9500", "2")


def test_a_pods_own_annotations_are_kept_beside_the_scrape_ones_and_win() -> None:
    annotations = broker(objects(metrics=ON, pod={"annotations": {"prometheus.io/scrape": "false", "team": "hpc"}}))
    assert annotations["metadata"]["annotations"]["prometheus.io/scrape"] == "false"
    assert annotations["metadata"]["annotations"]["team"] == "hpc"


def test_without_metrics_nothing_is_served_or_announced() -> None:
    rendered = objects()
    assert "annotations" not in broker(rendered)["metadata"]
    assert [port["name"] for port in rendered["Service/dev"]["spec"]["ports"]] == ["flux-overlay"]
    assert env(rendered)["MC_METRICS_PORT"] == ""
    assert not [key for key in rendered if key.startswith("ServiceMonitor/")]


def test_the_service_monitor_conforms_to_its_crd_and_selects_the_headless_services_metrics_port() -> None:
    rendered = objects(metrics=MONITORED)
    monitor, service = rendered["ServiceMonitor/dev"], rendered["Service/dev"]
    assert crd_problems(monitor) == []
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [service["metadata"]["namespace"]]}


def test_the_crd_schema_refuses_what_the_api_server_refuses() -> None:
    monitor = objects(metrics=MONITORED)["ServiceMonitor/dev"]
    assert crd_problems({**monitor, "spec": {**monitor["spec"], "endpoint": []}}) != []


@pytest.mark.parametrize("version", [SUPPORTED[0], SUPPORTED[-1]])
def test_the_objects_with_metrics_conform_to_kubernetes(version: str) -> None:
    for key, obj in objects(metrics=ON).items():
        if not key.startswith("ServiceMonitor/"):
            assert_conforms(obj, version)


def test_the_service_monitor_follows_the_service_in_the_graph() -> None:
    deployment = deploy(config(metrics=MONITORED))
    (monitor,) = [r for r in deployment.resources if r.name == "dev-service-monitor"]
    assert (monitor.inputs["apiVersion"], monitor.inputs["kind"]) == ("monitoring.coreos.com/v1", "ServiceMonitor")
    (service,) = [r for r in deployment.resources if r.name == "dev-service"]
    assert deployment.urn(service) in deployment.options["dev-service-monitor"]["dependencies"]
    assert deployment.parent(monitor) is not None and "MiniCluster" in deployment.parent(monitor)  # type: ignore[operator]


def test_a_cluster_without_the_prometheus_operator_is_told_before_anything_is_created(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    found = admission.check(load_spec({f"minicluster:{k}": v for k, v in config(metrics=MONITORED).items()}, "dev"),
                            Access(), OWNER)  # fmt: skip
    assert found.refused is not None
    assert (
        "the cluster has no ServiceMonitor of monitoring.coreos.com/v1 (its CRD is not installed): install the "
        "Prometheus Operator, or set minicluster:metrics.serviceMonitor to false" in found.refused
    )
    kube_api.crds.add("monitoring.coreos.com/v1/servicemonitors")
    assert admission.check(load_spec({f"minicluster:{k}": v for k, v in config(metrics=MONITORED).items()}, "dev"),
                           Access(), OWNER).refused is None  # fmt: skip


REFUSED = [
    ("monitor-without-metrics", {"metrics": {"serviceMonitor": True}},
     "minicluster:metrics: metrics.serviceMonitor needs metrics.enabled: true"),
    ("port-of-the-overlay", {"metrics": {"enabled": True, "port": 8050}},
     "minicluster:metrics.port 8050 is the Flux overlay port (minicluster:port)"),
    ("port-out-of-range", {"metrics": {"enabled": True, "port": 70000}}, "minicluster:metrics.port"),
    ("unknown-key", {"metrics": {"enabled": True, "path": "/m"}}, "minicluster:metrics.path"),
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "expected"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_bad_metrics_input_is_refused_naming_the_key(overrides: Json, expected: str) -> None:
    problems = refused_problems(config(**overrides))
    assert any(problem.startswith(expected) for problem in problems), problems
