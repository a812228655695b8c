"""The flux view (flux_view.enabled): Flux copied from a flux-view image into a volume of the pod by an
init container, and mounted where every container that runs Flux finds it (the Flux container, the
autoscaler's). Pure."""

from __future__ import annotations

from typing import Any

from flux_minicluster.config import paths
from flux_minicluster.config.spec import MiniClusterSpec

Manifest = dict[str, Any]
FLUX_VIEW = paths.FLUX_VIEW
# The flux-view images hold Flux as a spack view under /opt/views/._view/<hash>, linked into
# MC_VIEW_SOFTWARE: copy both into the shared volume (the entrypoint puts them to use).
FLUX_VIEW_SCRIPT = r"""set -eu
view=$(ls -d /opt/views/._view/* | head -n 1)
mkdir -p "$MC_FLUX_VIEW/view"
cp -R "$view"/. "$MC_FLUX_VIEW/view/"
if [ -d "$MC_VIEW_SOFTWARE" ]; then
  mkdir -p "$MC_FLUX_VIEW/software" && cp -R "$MC_VIEW_SOFTWARE/." "$MC_FLUX_VIEW/software/"
fi
"""


def init_container(spec: MiniClusterSpec) -> Manifest:
    """Copies the view into the pod's volume before the containers that run Flux from it start."""
    return {
        "name": FLUX_VIEW,
        "image": spec.flux_view.image,
        "command": ["/bin/sh", "-c", FLUX_VIEW_SCRIPT],
        "env": [
            {"name": "MC_FLUX_VIEW", "value": spec.flux_view.path},
            {"name": "MC_VIEW_SOFTWARE", "value": paths.VIEW_SOFTWARE},
        ],
        "volumeMounts": [{"name": FLUX_VIEW, "mountPath": spec.flux_view.path}],
    }


def mounts(spec: MiniClusterSpec) -> list[Manifest]:
    """Where a container that runs Flux finds the flux view (none without one)."""
    if not spec.flux_view.enabled:
        return []
    found: list[Manifest] = [{"name": FLUX_VIEW, "mountPath": spec.flux_view.path}]
    if spec.restricted:  # a user who may not write there gets the view's software mounted
        found.append({"name": FLUX_VIEW, "mountPath": paths.VIEW_SOFTWARE, "subPath": "software", "readOnly": True})
    return found


def keygen_mounts(spec: MiniClusterSpec) -> list[Manifest]:
    """Where the keygen container finds the flux view: the view, and its software mounted where the
    view's links point, for root and uid 1000 alike. The keygen pod runs nothing but `flux keygen`, so
    what the image itself keeps there does not matter to it (the Flux container merges the two)."""
    return [
        {"name": FLUX_VIEW, "mountPath": spec.flux_view.path},
        {"name": FLUX_VIEW, "mountPath": paths.VIEW_SOFTWARE, "subPath": "software", "readOnly": True},
    ]
