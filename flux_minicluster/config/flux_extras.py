"""Flux from an init container (the flux view), and the Flux RESTful API. Pure pydantic."""

from __future__ import annotations

from pydantic import model_validator

from flux_minicluster.config import rules
from flux_minicluster.config.settings import Model
from flux_minicluster.config.types import AbsolutePath, GitBranch, GitRepository, Image, MountPath, Port

DEFAULT_FLUX_VIEW_IMAGE = "ghcr.io/converged-computing/flux-view-rocky:tag-9"
FLUX_RESTFUL_API_REPOSITORY = "flux-framework/flux-restful-api"


class FluxView(Model):
    """Flux without Flux in the application image: an init container copies a Flux install (a spack
    view, as the flux-operator's flux-view images hold it) into the pod, and the entrypoint uses it."""

    enabled: bool = False
    """Use the view (the application image then needs no Flux, only bash)."""
    image: Image = DEFAULT_FLUX_VIEW_IMAGE
    """The view image: match the application image's OS (rocky 8/9, ubuntu focal/jammy/noble, arm)."""
    path: MountPath = "/mnt/flux"
    """Where the view is mounted in the pods."""


class RestfulApi(Model):
    """The Flux RESTful API server on rank 0 of a persistent cluster, behind a Service."""

    enabled: bool = False
    """Start the server (needs a persistent cluster: no minicluster:command)."""
    port: Port = 5000
    """Its port, on the pod and on the Service <name>-api."""
    secret_name: str | None = None
    """Existing Secret with keys `user`, `token` and `secret-key` (required when enabled)."""
    install_dir: AbsolutePath = "/code"
    """Where the image has the server's code (its init container copies it); otherwise it is cloned."""
    repository: GitRepository = FLUX_RESTFUL_API_REPOSITORY
    """GitHub repository to install from."""
    branch: GitBranch = "main"
    """Branch to install."""

    @model_validator(mode="after")
    def _credentials(self) -> RestfulApi:
        if self.enabled and not self.secret_name:
            raise ValueError("restfulApi.secretName is required when enabled: the API never runs open")
        if self.secret_name is not None:
            rules.subdomain(self.secret_name)
        return self


class Metrics(Model):
    """Prometheus metrics, served by every broker pod from its Flux container with Flux's own Python:
    each pod its broker's state, rank 0 also the instance's (nodes, cores, GPUs, jobs, queues, uptime)
    and the cluster's size and bounds (docs/production.md lists them)."""

    enabled: bool = False
    """Serve /metrics on `port` in every broker pod; the headless Service names the port `metrics`, and
    the pods carry the prometheus.io scrape annotations."""
    port: Port = 9410
    """The port /metrics is served on."""
    service_monitor: bool = False
    """Also declare a Prometheus Operator ServiceMonitor (monitoring.coreos.com/v1) for the headless
    Service (needs the operator's CRDs in the cluster)."""

    @model_validator(mode="after")
    def _monitor_needs_metrics(self) -> Metrics:
        if self.service_monitor and not self.enabled:
            raise ValueError("metrics.serviceMonitor needs metrics.enabled: true (there is nothing to monitor)")
        return self
