"""The keeper (keeper.enabled): a controller of the MiniCluster's own that replaces a broker pod lost
to a disruption at once, instead of after the Job controller's back-off. Pure pydantic;
docs/lost-pods.md tells what it replaces, and when."""

from __future__ import annotations

from flux_minicluster.config.settings import Model
from flux_minicluster.config.types import Image


class Keeper(Model):
    """A Deployment of one pod that watches the Job's pods and replaces one lost to an eviction, a
    preemption or a drain (the pod's DisruptionTarget condition) at once, as the Job controller would
    make it, so that no back-off (10 s, doubling with each lost pod for the Job's whole life) is waited
    for. Rank 0 with a stateVolume is replaced while it stops: the saved instance's lock holds the new
    broker back until the old one has let go. Any other lost pod stays the Job controller's."""

    enabled: bool = False
    """Run the keeper. Its account may create pods in the namespace, which no other part of the
    MiniCluster may: off by default."""
    image: Image | None = None
    """The keeper's image: any with python3 (3.6 or newer) on its PATH. Unset: the MiniCluster's image."""
