"""The size of a running MiniCluster, as the scale ConfigMap and the Job hold it: one definition for
the two writers, `pulumi up`'s Scale (cluster/scale.py) and the autoscaler in rank 0's pod
(builders/scripts/autoscaler.py), which imports this very file from its run-config directory.

So: the standard library only, and annotations as strings (an image's Python may be older than the
project's).
"""

FIELD_MANAGER = "minicluster-scale"
"""Owns the Job's parallelism and completions (Pulumi ignores them on an elastic Job) and the scale data."""

AUTOSCALER = "minicluster-autoscaler"
"""The component its Events name as their source."""
GREW, SHRANK, GROW_ROLLED_BACK, RESIZE_FAILED = "Grew", "Shrank", "GrowRolledBack", "ResizeFailed"
EVENT_REASONS = (GREW, SHRANK, GROW_ROLLED_BACK, RESIZE_FAILED)
"""The reasons of the autoscaler's Events on the Job: what `minicluster status` looks for."""


def smallest_size(min_size: "int | None") -> int:
    """The smallest size a cluster may have: minSize, else 1."""
    return min_size or 1


def quorum(size: int, min_size: "int | None", largest_size: int) -> "int | None":
    """broker.quorum at a given size, when it must differ from Flux's default of every rank in the
    hostlist: minSize if set, else every broker of the current size."""
    if min_size is not None:
        return min_size
    return size if largest_size > size else None


def scale_files(size: int, min_size: "int | None", largest_size: int) -> "dict[str, str]":
    """The scale ConfigMap's files: what a broker reads at start about the current size."""
    files = {"size": str(size)}
    at_size = quorum(size, min_size, largest_size)
    if at_size is not None:
        files["quorum"] = str(at_size)
    return files


def scale_config_patch(size: int, min_size: "int | None", largest_size: int) -> "dict[str, object]":
    """The merge patch that writes the scale files for `size` (a quorum no longer needed is removed)."""
    data: dict[str, str | None] = {"quorum": None}
    data.update(scale_files(size, min_size, largest_size))
    return {"data": data}


def job_patch(size: int) -> "dict[str, object]":
    """The merge patch that resizes the Indexed Job: both fields change together (elastic Indexed Jobs)."""
    return {"spec": {"parallelism": size, "completions": size}}


RESIZING = "minicluster.flux-framework.org/resizing"
"""The Job's annotation that says who resizes it now, and until when: `pulumi up` (the Scale) and rank
0's autoscaler each take it before a resize, so that they never resize the same Job at once. It is
taken with the Job's resourceVersion as a precondition: of two takers, the API server lets one win."""
PULUMI, AUTOSCALER_HOLDER = "pulumi", "autoscaler"


def lease(holder: str, until: float) -> str:
    """The annotation's value: `holder` resizes the Job until `until` (seconds since the epoch)."""
    return f"{holder} until {until:.0f}"


def lease_holder(annotations: "dict[str, str] | None", now: float) -> "str | None":
    """Who holds the resize now (None: nobody; a lease past its time, or unreadable, holds nothing)."""
    value = (annotations or {}).get(RESIZING, "")
    holder, _, until = value.partition(" until ")
    try:
        return holder if holder and float(until) > now else None
    except ValueError:
        return None


def lease_patch(value: "str | None", resource_version: "str | None") -> "dict[str, object]":
    """The merge patch that takes (a value) or gives back (None) the lease; with `resource_version`, the
    API server refuses it (409) if the Job changed since it was read."""
    metadata: dict[str, object] = {"annotations": {RESIZING: value}}
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    return {"metadata": metadata}
