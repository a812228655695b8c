"""Where the certificate comes from, on mocks: keygen pod, local, or the user's own (issue 4)."""

from __future__ import annotations

import json

from flux_minicluster.config import certificate
from tests.conftest import config
from tests.harness import KEYGEN_CERTIFICATE, deploy, deploy_rejected
from tests.plain import is_secret, plain

SECRET = "kubernetes:core/v1:Secret"
POD_KEYGEN = "pulumi-python:dynamic/minicluster:CurveCertificate"
LOCAL_KEYGEN = "pulumi-python:dynamic/minicluster:LocalCurveCertificate"


def test_default_is_the_keygen_pod_named_for_rank0_with_the_cluster_image() -> None:
    keygen = deploy(config()).one(POD_KEYGEN)
    assert keygen.name == "dev-curve-certificate"
    assert (keygen.inputs["certName"], keygen.inputs["namespace"], keygen.inputs["rotation"]) == ("dev-0", "default", 0)
    assert json.loads(keygen.inputs["pod"])["spec"]["containers"][0]["image"] == config()["image"]


def test_the_keygen_pod_crosses_the_engine_as_json_text_so_its_numbers_stay_whole() -> None:
    keygen = deploy(config()).one(POD_KEYGEN)
    assert isinstance(keygen.inputs["pod"], str)
    assert json.loads(keygen.inputs["pod"])["spec"]["activeDeadlineSeconds"] == 300
    assert '"activeDeadlineSeconds": 300,' in keygen.inputs["pod"]


def test_rotation_setting_reaches_the_keygen_resource() -> None:
    assert deploy(config(certificateRotation=3)).one(POD_KEYGEN).inputs["rotation"] == 3


def test_kubernetes_context_setting_is_the_keygen_pods_context() -> None:
    keygen = deploy({**config(), "kubernetes:context": "kind-flux"}).one(POD_KEYGEN)
    assert keygen.inputs["kubeContext"] == "kind-flux"


def test_public_key_is_a_plain_output_and_no_output_is_secret_or_holds_the_secret_key() -> None:
    deployment = deploy(config())
    assert deployment.outputs["publicKey"] == KEYGEN_CERTIFICATE.public_key
    assert deployment.secret_outputs == set()
    assert KEYGEN_CERTIFICATE.secret_key not in repr(deployment.outputs)


CERTIFICATE_KEY = ("minicluster:curveCertificate",)
"""Set with `pulumi config set --secret`, as it must be."""


def test_provided_certificate_goes_into_the_secret_with_no_keygen_resource() -> None:
    provided = certificate.generate("dev-0")
    deployment = deploy(config(curveCertificate=provided.text()), secret_keys=CERTIFICATE_KEY)
    assert POD_KEYGEN not in deployment.kinds and LOCAL_KEYGEN not in deployment.kinds
    string_data = deployment.one(SECRET).inputs["stringData"]
    assert is_secret(string_data)
    assert plain(string_data) == {"curve.cert": provided.text()}
    assert deployment.outputs["publicKey"] == provided.public_key


def test_local_keygen_uses_no_pod() -> None:
    deployment = deploy(config(keygen="local"))
    assert POD_KEYGEN not in deployment.kinds
    assert plain(deployment.one(SECRET).inputs["stringData"]) == {"curve.cert": KEYGEN_CERTIFICATE.text()}


def test_a_bad_provided_certificate_is_refused_by_key_without_echoing_it() -> None:
    provided = certificate.generate("dev-0")
    mismatched = provided.text().replace(provided.public_key, certificate.generate("x").public_key)
    message, deployment = deploy_rejected(config(curveCertificate=mismatched), secret_keys=CERTIFICATE_KEY)
    assert "minicluster:curveCertificate: public-key is not the public half of secret-key" in message
    assert provided.secret_key not in message
    assert deployment.resources == []


def test_a_certificate_the_stack_keeps_in_plain_text_is_refused_without_echoing_it() -> None:
    """Its secret key would sit in the stack file (often in git) and in the state's inputs in the clear."""
    provided = certificate.generate("dev-0")
    message, deployment = deploy_rejected(config(curveCertificate=provided.text()))
    assert (
        "minicluster:curveCertificate holds the cluster's secret key, and the stack keeps it in plain text: set it "
        'encrypted, with `pulumi config set --secret minicluster:curveCertificate "$(cat curve.cert)"`'
    ) in message
    assert provided.secret_key not in message
    assert deployment.resources == []
