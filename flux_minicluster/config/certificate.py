"""The CURVE certificate every broker shares: parse, validate and make ZeroMQ zcert text.

Pure (pyzmq only, for the keypair maths). Whatever the source (the keygen pod, user config, local
generation), the text is validated here and rendered in one canonical layout, so a bad certificate fails
at `pulumi up` with a specific message instead of hanging the brokers at "connecting".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import zmq

Z85_KEY_LENGTH = 40
_Z85 = re.compile(r"^[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]+$")
_KEY_LINE = re.compile(r'^(?P<key>[A-Za-z0-9._-]+)\s*=\s*(?P<value>"[^"]*"|\S.*?)\s*$')


class CertificateError(ValueError):
    """The text is not a usable Flux CURVE certificate. The message never contains key material."""


@dataclass(frozen=True)
class CurveCertificate:
    name: str
    public_key: str
    secret_key: str = field(repr=False)
    metadata: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        """zcert text in flux keygen's layout (what `[bootstrap] curve_cert` points to)."""
        meta = {"name": self.name, **self.metadata}
        return "\n".join(
            [
                "#   ZeroMQ CURVE **Secret** Certificate",
                "#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.",
                "",
                "metadata",
                *(f'    {key} = "{value}"' for key, value in meta.items()),
                "curve",
                f'    public-key = "{self.public_key}"',
                f'    secret-key = "{self.secret_key}"',
                "",
            ]
        )


def generate(name: str) -> CurveCertificate:
    """A fresh keypair, as `flux keygen --name=NAME` would make (pyzmq's libsodium)."""
    public, secret = zmq.curve_keypair()
    return CurveCertificate(name=name, public_key=public.decode(), secret_key=secret.decode())


def parse(text: str) -> CurveCertificate:
    """Parse and check zcert text: both sections, a name, 40-character Z85 keys that form a pair."""
    if not text.strip():
        raise CertificateError("the certificate is empty")
    if "-----BEGIN" in text:
        raise CertificateError(
            "this looks like a PEM file; Flux needs a ZeroMQ CURVE certificate as `flux keygen` writes it"
        )
    sections = _sections(text)
    for required in ("metadata", "curve"):
        if required not in sections:
            raise CertificateError(f"the certificate has no `{required}` section")
    metadata, curve = sections["metadata"], sections["curve"]
    if not metadata.get("name"):
        raise CertificateError(
            "the certificate's metadata has no `name` (rank 0 would die with "
            "'overlay_authorize: Invalid argument'); generate it with `flux keygen --name=...`"
        )
    public = _key(curve, "public-key")
    secret = _key(curve, "secret-key")
    if zmq.curve_public(secret.encode()).decode() != public:
        raise CertificateError("public-key is not the public half of secret-key (mismatched pair)")
    extra = {key: value for key, value in metadata.items() if key != "name"}
    return CurveCertificate(name=metadata["name"], public_key=public, secret_key=secret, metadata=extra)


def _sections(text: str) -> dict[str, dict[str, str]]:
    """ZPL: unindented lines open a section, indented `key = "value"` lines belong to it."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            current = sections.setdefault(line.strip(), {})
            continue
        match = _KEY_LINE.match(line.strip())
        if current is None or match is None:
            raise CertificateError(f"unexpected line {redact(line.strip())!r} in the certificate")
        current[match["key"]] = match["value"].strip('"')
    return sections


def _key(curve: dict[str, str], which: str) -> str:
    value = curve.get(which)
    if value is None:
        raise CertificateError(f"the curve section has no {which}")
    if len(value) != Z85_KEY_LENGTH:
        raise CertificateError(f"{which} must be {Z85_KEY_LENGTH} Z85 characters (it has {len(value)})")
    if not _Z85.match(value):
        raise CertificateError(f"{which} has characters outside the Z85 alphabet")
    return value


def redact(line: str) -> str:
    return re.sub(r"[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{20,}", "<redacted>", line)
