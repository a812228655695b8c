"""A claim that every broker pod mounts (minicluster:volumes, minicluster:stateVolume), as the admission
check reads it: one that mounts on one node only (ReadWriteOnce) or in one pod only (ReadWriteOncePod)
is a warning, for the pods can then not all start where the scheduler puts them. Its access modes as
bound (the volume's), else as asked for. Against the API stand-in, which answers the claim's GET as the
API server does (the real one: tests/realengine/test_admission_of_shared_claims.py)."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.cluster import admission
from tests.cluster.test_dry_run import verdict
from tests.kube_api import Cluster
from tests.kube_api.samples import FOUR

SCRATCH = {"scratch": {"path": "/scratch", "claimName": "scratch"}}
"""A volume that mounts the claim scratch, which the base config's 4 pods all mount."""


def claim(api: Cluster, *asked: str, bound: tuple[str, ...] = ()) -> None:
    """The claim scratch, asking for `asked`; bound to a volume of the modes `bound`, if given."""
    status = {"phase": "Bound", "accessModes": list(bound)} if bound else {"phase": "Pending"}
    api.existing[("persistentvolumeclaims", "default", "scratch")] = {
        "metadata": {"name": "scratch", "namespace": "default"}, "spec": {"accessModes": list(asked)},
        "status": status,
    }  # fmt: skip


def warned(api: Cluster, *asked: str, bound: tuple[str, ...] = (), **overrides: Any) -> list[str]:
    api.nodes = FOUR
    claim(api, *asked, bound=bound)
    found = verdict(**{"volumes": SCRATCH, **overrides})
    assert found.refused is None
    return found.warnings


def test_a_read_write_once_claim_every_pod_mounts_is_a_warning(kube_api: Cluster) -> None:
    assert warned(kube_api, "ReadWriteOnce") == [
        "admission check: the PersistentVolumeClaim 'scratch' that minicluster:volumes.scratch.claimName names is "
        "ReadWriteOnce: it mounts on one node only, and every broker pod (4) mounts it, so they run on that node "
        "alone (one placed on another waits with a Multi-Attach error); use a ReadWriteMany claim, or pin every pod "
        "to one node (minicluster:pod.nodeSelector kubernetes.io/hostname)"
    ]


def test_a_read_write_once_pod_claim_is_a_warning_as_one_pod_alone_may_use_it(kube_api: Cluster) -> None:
    assert warned(kube_api, "ReadWriteOncePod") == [
        "admission check: the PersistentVolumeClaim 'scratch' that minicluster:volumes.scratch.claimName names is "
        "ReadWriteOncePod: one pod alone may use it, and every broker pod (4) mounts it; use a ReadWriteMany claim"
    ]


def test_an_elastic_cluster_counts_the_pods_it_may_grow_to(kube_api: Cluster) -> None:
    (warning,) = warned(kube_api, "ReadWriteOnce", command=None, size=2, maxSize=8)
    assert "every broker pod (8) mounts it" in warning


@pytest.mark.parametrize(
    ("asked", "overrides"),
    [(("ReadWriteMany",), {}), (("ReadWriteOnce", "ReadWriteMany"), {}),
     (("ReadWriteOnce",), {"pod": {"nodeSelector": {"kubernetes.io/hostname": "node-1"}}}),
     (("ReadWriteOnce",), {"size": 1}), (("ReadWriteOncePod",), {"size": 1})],
    ids=["many", "once-or-many", "pinned-to-one-node", "one-pod", "one-pod-alone"],
)  # fmt: skip
def test_a_claim_all_the_pods_can_use_passes(kube_api: Cluster, asked: tuple[str, ...], overrides: Any) -> None:
    assert warned(kube_api, *asked, **overrides) == []


def test_read_only_many_passes_for_a_read_only_volume_alone(kube_api: Cluster) -> None:
    read_only = {"scratch": {**SCRATCH["scratch"], "readOnly": True}}
    assert warned(kube_api, "ReadOnlyMany", "ReadWriteOnce", volumes=read_only) == []
    (warning,) = warned(kube_api, "ReadOnlyMany", "ReadWriteOnce")
    assert "is ReadWriteOnce: it mounts on one node only" in warning


def test_a_bound_claim_is_judged_by_its_volumes_modes(kube_api: Cluster) -> None:
    """A claim binds to a volume that has at least the modes it asked for: those are the ones that hold."""
    assert warned(kube_api, "ReadWriteOnce", bound=("ReadWriteOnce", "ReadWriteMany")) == []


def test_a_state_volume_claim_that_is_read_write_once_is_a_warning_whatever_the_config_says(
    kube_api: Cluster,
) -> None:
    """stateVolume.accessMode says ReadWriteMany by default: the claim itself is what the pods get."""
    (warning,) = warned(kube_api, "ReadWriteOnce", volumes=None, command=None, stateVolume={"claimName": "scratch"})
    assert warning.startswith(
        "admission check: the PersistentVolumeClaim 'scratch' that minicluster:stateVolume.claimName names is "
        "ReadWriteOnce: it mounts on one node only"
    )


def test_a_claim_with_no_problem_gives_no_verdict_but_the_plain_one(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    claim(kube_api, "ReadWriteMany")
    assert verdict(volumes=SCRATCH) == admission.Verdict()
