"""The names pulumi-kubernetes gives the objects whose manifests have none: `<resource name>-<8 hex>`,
random, kept across updates. The tests name them so too, on mocks (harness.py) and in the test
kubelet's cluster, so that no test can count on a name the engine would not give."""

from __future__ import annotations

import hashlib
import secrets

SALT = secrets.token_hex(8)
"""New for each test session: no test can know a suffix in advance; the same within a session, as the
engine keeps a name across updates."""


def auto_name(resource_name: str, stack: str = "dev") -> str:
    """The name pulumi-kubernetes gives the object of the resource `resource_name` of `stack`."""
    digest = hashlib.sha256(f"{SALT}/{stack}/{resource_name}".encode()).hexdigest()
    return f"{resource_name}-{digest[:8]}"
