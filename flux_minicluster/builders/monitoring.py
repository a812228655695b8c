"""Prometheus metrics (metrics.enabled): the port every broker pod serves /metrics on (the pods' own
metrics.py), the scrape annotations, the headless Service's port, and the Prometheus Operator's
ServiceMonitor (metrics.serviceMonitor). Pure."""

from __future__ import annotations

from typing import Any

from flux_minicluster.builders.names import labels
from flux_minicluster.config.spec import MiniClusterSpec

Manifest = dict[str, Any]
PORT_NAME = "metrics"
PATH = "/metrics"
SERVICE_MONITOR_API = "monitoring.coreos.com/v1"
SCRAPE_INTERVAL = "15s"


def container_port(spec: MiniClusterSpec) -> list[Manifest]:
    return [{"name": PORT_NAME, "containerPort": spec.metrics.port, "protocol": "TCP"}] if spec.metrics.enabled else []


def service_port(spec: MiniClusterSpec) -> list[Manifest]:
    port = spec.metrics.port
    return [{"name": PORT_NAME, "port": port, "targetPort": port, "protocol": "TCP"}] if spec.metrics.enabled else []


def scrape_annotations(spec: MiniClusterSpec) -> dict[str, str]:
    """The annotations Prometheus' Kubernetes pod discovery is usually configured to follow."""
    if not spec.metrics.enabled:
        return {}
    return {"prometheus.io/scrape": "true", "prometheus.io/port": str(spec.metrics.port), "prometheus.io/path": PATH}


def service_monitor(spec: MiniClusterSpec) -> Manifest | None:
    """The Prometheus Operator's ServiceMonitor of the headless Service's `metrics` port: every broker
    pod (rank 0 serves the instance's metrics, every pod its broker's state)."""
    if not spec.metrics.service_monitor:
        return None
    own = labels(spec, "metrics")
    return {
        "apiVersion": SERVICE_MONITOR_API,
        "kind": "ServiceMonitor",
        "metadata": {"name": spec.service, "namespace": spec.namespace, "labels": own},
        "spec": {
            "selector": {"matchLabels": labels(spec, "broker-network")},
            "namespaceSelector": {"matchNames": [spec.namespace]},
            "endpoints": [{"port": PORT_NAME, "path": PATH, "interval": SCRAPE_INTERVAL}],
        },
    }
