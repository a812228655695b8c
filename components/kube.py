"""Connecting to the cluster, the way the Kubernetes provider and kubectl do."""

from __future__ import annotations


class NoCluster(RuntimeError):
    """Neither a kubeconfig nor an in-cluster service account is usable."""


def load_config(context: str | None) -> None:
    """The kubeconfig (KUBECONFIG or ~/.kube/config) with `context` (None: its current one), or the
    pod's service account when running inside the cluster."""
    from kubernetes import config

    try:
        config.load_kube_config(context=context)  # type: ignore[no-untyped-call]
    except config.ConfigException:
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
        except config.ConfigException as error:
            raise NoCluster(f"no usable kubeconfig or in-cluster account: {error}") from None
