"""The pods' Python modules (pod_scripts/*.py), imported here as the pods import them: by their
file name, from the directory they sit in; `sizing` is config/sizing.py, as the pods get it."""

from __future__ import annotations

import sys

from flux_minicluster.builders import files
from flux_minicluster.config import sizing

SCRIPTS_DIR = str(files.POD_SCRIPTS)
if SCRIPTS_DIR not in sys.path:
    sys.path.append(SCRIPTS_DIR)
sys.modules.setdefault("sizing", sizing)

import autoscaler  # type: ignore[import-not-found]  # noqa: E402
import autoscaling  # type: ignore[import-not-found]  # noqa: E402
import cluster_api  # type: ignore[import-not-found]  # noqa: E402
import keeper  # type: ignore[import-not-found]  # noqa: E402

__all__ = ["autoscaler", "autoscaling", "cluster_api", "keeper"]
