"""Dynamic resources that make the CURVE certificate once and keep it in Pulumi state.

`CurveCertificate` runs the keygen pod (flux_minicluster.cluster.keygen_pod); `LocalCurveCertificate` uses pyzmq
in the provider process. Both are stable: the keypair changes only when the namespace, the
MiniCluster name or `certificateRotation` changes (a replacement); the other inputs say how the keypair
is made, and their change is no change at all. The certificate text is a secret output; the public key
is plain.

What crosses the engine: every input travels as a protobuf Struct, so numbers arrive as doubles,
`None` values are dropped and secrets may arrive wrapped. The provider therefore reads its inputs
through `CertificateInputs`, which gives each one its type back, and the keygen pod's manifest (a
free-form Kubernetes object) crosses as JSON text, which no wire can change.

The provider objects are pickled into state by reference (this module is imported by the provider
process, which Pulumi starts in the project directory), so editing this code changes neither the
key nor the outputs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

import pulumi
from pulumi.dynamic import (
    CreateResult,
    ReadResult,
    UpdateResult,
)
from pulumi.runtime import rpc
from pydantic import Field

from flux_minicluster.cluster.kube import CURRENT_CONTEXT, Access
from flux_minicluster.config import certificate
from flux_minicluster.resources.wire import ClusterInputs, WireProvider, WireResource, cluster_inputs, plain

if TYPE_CHECKING:  # the provider process imports this module, and needs neither (0.2 s of its start)
    from flux_minicluster.config.spec import MiniClusterSpec

OUTPUTS = ("certificate", "publicKey")


class CertificateInputs(ClusterInputs):
    """The certificate resources' inputs, typed again on arrival from the engine (300.0 -> 300)."""

    namespace: str
    cluster_name: str = Field(alias="clusterName")
    cert_name: str = Field(alias="certName")
    rotation: int = Field(default=0, ge=0)
    timeout: int | None = Field(default=None, ge=1)
    """Seconds the keygen pod may take (keygen pod only)."""
    schedule_timeout: int | None = Field(default=None, ge=1, alias="scheduleTimeout")
    """Seconds it may stay unschedulable (keygen pod only)."""
    pod: str | None = None
    """The keygen pod's manifest as JSON text (keygen pod only)."""

    REPLACE_ON: ClassVar[frozenset[str]] = frozenset({"namespace", "clusterName", "certName", "rotation"})
    """Inputs whose change means a new keypair. Everything else may change without rotating the key."""
    CREATION_ONLY: ClassVar[frozenset[str]] = frozenset(
        {"timeout", "scheduleTimeout", "kubeContext", "kubeconfig", "pod"}
    )
    """How the keypair is made: a new keygen pod's manifest, image or timeouts change nothing in the
    cluster or in the certificate (and must not show its Secret and the Job as replaced in a preview)."""
    DELETE_BEFORE_REPLACE: ClassVar[bool] = True

    @property
    def resource_id(self) -> str:
        return f"{self.namespace}/{self.cluster_name}/{self.rotation}"

    def keygen_pod(self) -> tuple[dict[str, Any], float, float]:
        """The pod's manifest, how long it may take, and how long it may stay unschedulable."""
        if self.pod is None or self.timeout is None:
            raise ValueError("the keygen pod's manifest and timeout are missing from the inputs")
        manifest: dict[str, Any] = json.loads(self.pod)
        return manifest, float(self.timeout), float(self.schedule_timeout or self.timeout)


class _StableCertificateProvider(WireProvider):
    INPUTS = CertificateInputs

    def make(self, inputs: CertificateInputs) -> certificate.CurveCertificate:
        raise NotImplementedError

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = CertificateInputs.from_wire(props)
        return CreateResult(inputs.resource_id, {**inputs.to_wire(), **_outputs(self.make(inputs))})

    # diff (WireProvider's) compares the inputs only: an edit of this code must not rotate the key.

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """Whatever the engine asks, an update keeps the key (diff reports none for these inputs today;
        the base class's would return no outputs, and so lose the certificate)."""
        return UpdateResult({**CertificateInputs.from_wire(news).to_wire(), **_kept_outputs(olds)})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """The certificate lives only in Pulumi's state: a refresh keeps it as it is."""
        return ReadResult(id_, {**CertificateInputs.from_wire(props).to_wire(), **_kept_outputs(props)})


class KeygenPodProvider(_StableCertificateProvider):
    """Runs `flux keygen` in a pod in the cluster, with the cluster's own image."""

    def make(self, inputs: CertificateInputs) -> certificate.CurveCertificate:
        from flux_minicluster.cluster import kube
        from flux_minicluster.cluster.keygen_pod import KeygenError, run_keygen_pod

        try:
            api_client = inputs.api_client()
        except kube.CredentialsFailed as error:
            raise KeygenError(str(error)) from None
        except kube.NoCluster as error:
            raise KeygenError(f"{error}; set kubernetes:context to one of your contexts") from None
        manifest, timeout, schedule_timeout = inputs.keygen_pod()
        return run_keygen_pod(api_client, manifest, timeout, schedule_timeout=schedule_timeout)


class LocalKeygenProvider(_StableCertificateProvider):
    """Makes the keypair with pyzmq in the provider process: no pod at all."""

    def make(self, inputs: CertificateInputs) -> certificate.CurveCertificate:
        return certificate.generate(inputs.cert_name)


def _outputs(made: certificate.CurveCertificate) -> dict[str, Any]:
    """The certificate leaves the provider marked secret, whatever the engine does with the resource options."""
    return {"certificate": rpc.wrap_rpc_secret(made.text()), "publicKey": made.public_key}


def _kept_outputs(props: dict[str, Any]) -> dict[str, Any]:
    return _outputs(certificate.parse(plain(props["certificate"])))


def certificate_inputs(spec: MiniClusterSpec, access: Access = CURRENT_CONTEXT, *, pod: bool) -> dict[str, Any]:
    """What the program sends the provider (with `pod`, the keygen pod and the cluster it runs in): also
    what the tests send it."""
    inputs = CertificateInputs(
        namespace=spec.namespace, clusterName=spec.name, certName=spec.rank0_host, rotation=spec.certificate_rotation,
    )  # fmt: skip
    if pod:
        from flux_minicluster.builders import keygen as keygen_builder

        keygen_pod = keygen_builder.keygen_pod(spec)
        inputs = inputs.model_copy(
            update={"pod": json.dumps(keygen_pod), "timeout": spec.keygen_timeout,
                    "schedule_timeout": spec.schedule_timeout}
        )  # fmt: skip
        return {**inputs.to_wire(), **cluster_inputs(access)}
    return inputs.to_wire()


class CurveCertificate(WireResource, module="minicluster", name="CurveCertificate"):
    """The certificate from a keygen pod."""

    PROVIDER = KeygenPodProvider
    certificate: pulumi.Output[str]
    publicKey: pulumi.Output[str]

    def __init__(
        self, name: str, spec: MiniClusterSpec, access: Access, opts: pulumi.ResourceOptions | None = None,
        *, packaged: bool = False,
    ) -> None:  # fmt: skip
        props = {**certificate_inputs(spec, access, pod=True), **dict.fromkeys(OUTPUTS)}
        super().__init__(name, props, _secret(opts), packaged=packaged)


class LocalCurveCertificate(WireResource, module="minicluster", name="LocalCurveCertificate"):
    """The certificate made with pyzmq, kept in state."""

    PROVIDER = LocalKeygenProvider
    certificate: pulumi.Output[str]
    publicKey: pulumi.Output[str]

    def __init__(
        self, name: str, spec: MiniClusterSpec, opts: pulumi.ResourceOptions | None = None, *, packaged: bool = False
    ) -> None:
        props = {**certificate_inputs(spec, pod=False), **dict.fromkeys(OUTPUTS)}
        super().__init__(name, props, _secret(opts), packaged=packaged)


def _secret(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["certificate"]))
