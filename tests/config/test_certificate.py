"""Parsing and checking CURVE certificates in every layout they arrive in (issue 4)."""

from __future__ import annotations

from pathlib import Path

import pytest
import zmq.auth

from flux_minicluster.config import certificate
from flux_minicluster.config.certificate import CertificateError, parse

PAIR = certificate.generate("dev-0")


def flux_keygen_layout(cert: certificate.CurveCertificate) -> str:
    """As flux-core's `flux keygen --name=dev-0` writes it (banner, keygen.* metadata)."""
    return (
        "#   ****  Generated on 2026-11-22 04:00:00 by CZMQ  ****\n"
        "#   ZeroMQ CURVE **Secret** Certificate\n"
        "#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.\n"
        "\n"
        "metadata\n"
        f'    name = "{cert.name}"\n'
        '    keygen.flux-core-version = "0.88.0"\n'
        '    keygen.hostname = "dev-keygen-x7k2p"\n'
        '    keygen.time = "2026-11-22T04:00:00"\n'
        '    keygen.userid = "0"\n'
        '    keygen.zmq-version = "4.3.5"\n'
        "curve\n"
        f'    public-key = "{cert.public_key}"\n'
        f'    secret-key = "{cert.secret_key}"\n'
    )


def test_reads_flux_keygen_layout_with_its_metadata() -> None:
    parsed = parse(flux_keygen_layout(PAIR))
    assert (parsed.name, parsed.public_key, parsed.secret_key) == ("dev-0", PAIR.public_key, PAIR.secret_key)
    assert parsed.metadata["keygen.hostname"] == "dev-keygen-x7k2p"


def test_reads_pyzmq_layout(tmp_path: Path) -> None:
    _, secret_file = zmq.auth.create_certificates(str(tmp_path), "dev", metadata={"name": "dev-0"})
    public, secret = zmq.auth.load_certificate(secret_file)
    parsed = parse(Path(secret_file).read_text())
    assert (parsed.public_key.encode(), parsed.secret_key.encode()) == (public, secret)


def test_reads_tab_indented_layout() -> None:
    assert parse(flux_keygen_layout(PAIR).replace("    ", "\t")) == parse(flux_keygen_layout(PAIR))


def test_canonical_text_round_trips_and_keeps_metadata() -> None:
    parsed = parse(flux_keygen_layout(PAIR))
    assert parse(parsed.text()) == parsed


def test_generated_keys_form_a_pair_that_zmq_accepts() -> None:
    assert zmq.curve_public(PAIR.secret_key.encode()).decode() == PAIR.public_key


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the certificate is empty"),
        ("-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----\n", "looks like a PEM file"),
        (flux_keygen_layout(PAIR).replace('    name = "dev-0"\n', ""), "metadata has no `name`"),
        (flux_keygen_layout(PAIR).split("curve\n")[0], "no `curve` section"),
        ("curve\n" + flux_keygen_layout(PAIR).split("curve\n")[1], "no `metadata` section"),
        (
            flux_keygen_layout(PAIR).replace(PAIR.public_key, PAIR.public_key[:30]),
            "public-key must be 40 Z85 characters",
        ),
        (flux_keygen_layout(PAIR).replace(PAIR.secret_key, "~" * 40), "secret-key has characters outside"),
        (
            flux_keygen_layout(PAIR).replace(PAIR.public_key, certificate.generate("x").public_key),
            "public-key is not the public half of secret-key",
        ),
        (flux_keygen_layout(PAIR).replace('    secret-key = "', '    secret-key: "'), "unexpected line"),
    ],
    ids=["empty", "pem", "no-name", "no-curve", "no-metadata", "short-key", "not-z85", "mismatched", "garbled"],
)
def test_malformed_certificates_get_a_specific_error_without_key_material(text: str, message: str) -> None:
    with pytest.raises(CertificateError, match=message) as raised:
        parse(text)
    assert PAIR.secret_key not in str(raised.value)
