"""The pods' Python modules (builders/scripts/*.py), imported here as the pods import them: by their
file name, from the directory they sit in."""

from __future__ import annotations

import sys
from importlib import resources

SCRIPTS_DIR = str(resources.files("flux_minicluster.builders").joinpath("scripts"))
if SCRIPTS_DIR not in sys.path:
    sys.path.append(SCRIPTS_DIR)

import autoscaling  # type: ignore[import-not-found]  # noqa: E402
import cluster_api  # type: ignore[import-not-found]  # noqa: E402

__all__ = ["autoscaling", "cluster_api"]
