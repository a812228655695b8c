"""The Flux RESTful API (restfulApi.enabled): where its init container puts the server, and the
environment rank 0 runs it with. Its credentials come from the user's Secret, never from config."""

from __future__ import annotations

from typing import Any

from flux_minicluster.config import paths
from flux_minicluster.config.spec import MiniClusterSpec

LIBRARIES = ".libraries"
"""Where, beside the RESTful API's code, its init container installs the libraries it needs."""


def settings(spec: MiniClusterSpec) -> dict[str, object | None]:
    if not spec.restful_api.enabled:
        return {}
    return {
        **location(),
        # The server's own settings (flux-restful-api reads these).
        "FLUX_AUTH_BACKEND": "shared-secret",
        "FLUX_REQUIRE_AUTH": "true",  # the same, for releases before FLUX_AUTH_BACKEND
        # FLUX_NUMBER_NODES, the server's node count, is set by instance.sh from the current size.
        "FLUX_OPTION_FLAGS": spec.option_flags,
    }


def location() -> dict[str, str]:
    """Where the RESTful API's init container puts the server, and rank 0 runs it from."""
    return {"MC_RESTFUL_DIR": paths.RESTFUL_API_DIR, "MC_RESTFUL_LIBRARIES": LIBRARIES}


def install_env(spec: MiniClusterSpec) -> list[dict[str, Any]]:
    """The RESTful API's init container (install_restful_api.sh): where the image may have the server,
    where to clone it from otherwise, and where to put it."""
    api = spec.restful_api
    settings = {
        **location(),
        "MC_RESTFUL_INSTALL_DIR": api.install_dir,
        "MC_RESTFUL_REPOSITORY": api.repository,
        "MC_RESTFUL_BRANCH": api.branch,
    }
    return [{"name": key, "value": value} for key, value in settings.items()]


KEYS = {"FLUX_USER": "user", "FLUX_TOKEN": "token", "FLUX_SECRET_KEY": "secret-key"}
"""The RESTful API server's credentials: its environment variable for each key of restfulApi.secretName."""


def credentials(spec: MiniClusterSpec) -> list[dict[str, Any]]:
    """From the user's Secret, never from config: the credentials never enter Pulumi's state."""
    api = spec.restful_api
    if not api.enabled:
        return []
    return [
        {"name": var, "valueFrom": {"secretKeyRef": {"name": api.secret_name, "key": key}}} for var, key in KEYS.items()
    ]
