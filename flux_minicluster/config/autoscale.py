"""Autoscaling (autoscale.enabled): rank 0 sizes an elastic cluster to its queue, between minSize and
maxSize, as the pods' service account, from a container of its own. Pure pydantic; docs/resizing.md
tells the contract."""

from __future__ import annotations

from flux_minicluster.config.settings import Model
from flux_minicluster.config.types import Seconds


class Autoscale(Model):
    """Rank 0 grows the cluster when queued jobs need more nodes than are free, and shrinks it by the
    highest ranks once they have been idle for scaleDownAfter, one change at a time, between minSize
    (else 1) and maxSize. Each change is an Event on the Job and a line in rank 0's log."""

    enabled: bool = False
    """Let rank 0 resize the cluster (an elastic cluster with maxSize above minSize). `size` is the size
    it starts at; `pulumi up` leaves the size alone afterwards unless `size` changes."""
    scale_down_after: Seconds = 300
    """Seconds a rank must have been idle (up, no job on it) before a shrink may take it."""
    interval: Seconds = 10
    """Seconds between two looks at the instance when nothing happens; a job submitted or ended is looked
    at at once."""
    cooldown: Seconds = 30
    """Seconds after a change before a shrink may start (a grow for waiting jobs never waits)."""
    admission_policy: bool = False
    """Also bound what the autoscaler's account may change, with a ValidatingAdmissionPolicy and its
    binding (Kubernetes 1.30+): the Job's size within minSize..maxSize, the scale ConfigMap's size data
    and the resize lease, nothing else. Off by default: whoever runs `pulumi up` then needs the right to
    create these cluster-scoped objects."""
