"""The test kubelet gives a deleted pod's containers the grace period the real kubelet gives them
(pkg/kubelet/pod_workers.go, calculateEffectiveGracePeriod): what the delete asked for wins over the pod's
own setting. A pod deleted with grace 0, as the certificate's provider deletes the keygen pod, stopped
after the spec's 30 s here, where the real kubelet stops it after 1 s."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kubelet.node import grace_period


def deleted_pod(deletion_grace: int | None, spec_grace: int | None) -> client.V1Pod:
    """A pod as the watch shows it once deleted: the API server has set the deletion's grace."""
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name="dev-keygen-x", deletion_grace_period_seconds=deletion_grace),
        spec=client.V1PodSpec(containers=[], termination_grace_period_seconds=spec_grace),
    )


def test_the_deletions_grace_wins_over_the_pods_own() -> None:
    assert grace_period(deleted_pod(deletion_grace=5, spec_grace=60)) == 5


def test_a_delete_with_grace_0_still_gives_the_containers_one_second() -> None:
    assert grace_period(deleted_pod(deletion_grace=0, spec_grace=30)) == 1


@pytest.mark.parametrize(("spec_grace", "expected"), [(45, 45), (None, 30)])
def test_without_a_deletions_grace_the_pods_own_applies_or_kubernetes_default(
    spec_grace: int | None, expected: int
) -> None:
    assert grace_period(deleted_pod(deletion_grace=None, spec_grace=spec_grace)) == expected
