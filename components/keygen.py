"""Dynamic resources that make the CURVE certificate once and keep it in Pulumi state.

`CurveCertificate` runs the keygen pod (components.keygen_pod); `LocalCurveCertificate` uses pyzmq
in the provider process. Both are stable: the keypair changes only when the namespace, the
MiniCluster name or `certificateRotation` changes (a replacement); any other input change is an
update that keeps the key. The certificate text is a secret output; the public key is plain.

The provider objects are pickled into state by reference (this module is imported by the provider
process, which Pulumi starts in the project directory), so editing this code changes neither the
key nor the outputs.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from components import certificate, manifests
from components.spec import MiniClusterSpec

REPLACE_ON = ("namespace", "clusterName", "certName", "rotation")
"""Inputs whose change means a new keypair. Everything else may change without rotating the key."""
OUTPUTS = ("certificate", "publicKey")


class _StableCertificateProvider(ResourceProvider):
    def make(self, props: dict[str, Any]) -> certificate.CurveCertificate:
        raise NotImplementedError

    def create(self, props: dict[str, Any]) -> CreateResult:
        made = self.make(props)
        resource_id = f"{props['namespace']}/{props['clusterName']}/{props['rotation']}"
        return CreateResult(resource_id, {**props, "certificate": made.text(), "publicKey": made.public_key})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # `__provider` is deliberately not compared: editing provider code must not rotate the key.
        compared = [key for key in news if not key.startswith("__") and key not in OUTPUTS]
        changed = [key for key in compared if olds.get(key) != news[key]]
        replaces = [key for key in changed if key in REPLACE_ON]
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=bool(replaces))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult({**news, **{key: olds.get(key) for key in OUTPUTS}})


class KeygenPodProvider(_StableCertificateProvider):
    """Runs `flux keygen` in a pod in the cluster, with the cluster's own image."""

    def make(self, props: dict[str, Any]) -> certificate.CurveCertificate:
        from components.keygen_pod import run_keygen_pod

        return run_keygen_pod(_core_api(props.get("kubeContext")), props["pod"], float(props["timeout"]))


class LocalKeygenProvider(_StableCertificateProvider):
    """Makes the keypair with pyzmq in the provider process: no pod at all."""

    def make(self, props: dict[str, Any]) -> certificate.CurveCertificate:
        return certificate.generate(props["certName"])


def _core_api(context: str | None) -> Any:
    """A client for the same cluster as the Kubernetes provider (the `kubernetes:context` setting)."""
    from kubernetes import client

    from components.kube import load_config

    load_config(context)
    return client.CoreV1Api()


def _inputs(spec: MiniClusterSpec) -> dict[str, Any]:
    return {
        "namespace": spec.namespace,
        "clusterName": spec.name,
        "certName": spec.rank0_host,
        "rotation": spec.certificate_rotation,
        "certificate": None,
        "publicKey": None,
    }


class CurveCertificate(Resource, module="minicluster", name="CurveCertificate"):
    """The certificate from a keygen pod."""

    certificate: pulumi.Output[str]
    publicKey: pulumi.Output[str]

    def __init__(
        self, name: str, spec: MiniClusterSpec, kube_context: str | None, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        pod = manifests.keygen_pod(spec, certificate.BEGIN_MARKER, certificate.END_MARKER)
        props = {**_inputs(spec), "pod": pod, "timeout": spec.keygen_timeout, "kubeContext": kube_context}
        super().__init__(KeygenPodProvider(), name, props, _secret(opts))


class LocalCurveCertificate(Resource, module="minicluster", name="LocalCurveCertificate"):
    """The certificate made with pyzmq, kept in state."""

    certificate: pulumi.Output[str]
    publicKey: pulumi.Output[str]

    def __init__(self, name: str, spec: MiniClusterSpec, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(LocalKeygenProvider(), name, _inputs(spec), _secret(opts))


def _secret(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["certificate"]))
