"""The API server's limit on one object's size, checked before anything is created: a ConfigMap or a
Secret holds at most 1 MiB of data. The user's text (a long command, hooks) is what can reach it."""

from __future__ import annotations

from components.builders import manifests
from components.config.loader import ConfigError
from components.config.spec import MiniClusterSpec

DATA_LIMIT = 1024 * 1024
"""Bytes of data one ConfigMap or Secret may hold."""
WHAT_FILLS = {"entrypoint": "minicluster:command and minicluster:hooks", "config-secret": "the secret config values"}


def check(spec: MiniClusterSpec) -> None:
    """Raises ConfigError naming the object, its size and the keys that fill it."""
    problems = []
    for obj in manifests.all_objects(spec, "certificate"):
        data = {**obj.get("data", {}), **obj.get("stringData", {})}
        size = sum(len(key.encode()) + len(str(value).encode()) for key, value in data.items())
        if obj["kind"] in ("ConfigMap", "Secret") and size > DATA_LIMIT:
            component = obj["metadata"]["labels"].get("app.kubernetes.io/component", "")
            problems.append(
                f"{WHAT_FILLS.get(component, 'the config')}: the {obj['kind']} {obj['metadata']['name']} would hold "
                f"{size} bytes, over the {DATA_LIMIT} (1 MiB) Kubernetes allows one {obj['kind']} (a batch command is "
                "stored twice: as arguments and in the batch script). Put a long script on a volume "
                "(minicluster:volumes) and run it from there"
            )
    if problems:
        raise ConfigError(problems)
