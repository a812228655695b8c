"""The soak (soak.py), short, in CI: one fault of each single kind in the order that found a defect
(rank 0 killed after a hand-over came back with scheduling stopped), a job stream throughout. After
each fault every rank comes back (in rank 0's view too) and the queue moves, with no rank drained;
at the end no job is left active, and each job that did not complete carries Flux's own reason.
(Which jobs a killed rank 0 loses is measured by the full soak, not asserted here: docs/lost-pods.md.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.soak.soak import Soak

pytestmark = pytest.mark.realflux
ORDER = ["rank 0 evicted", "worker deleted", "rank 0 killed", "worker killed", "worker cut off"]


def test_after_each_fault_the_cluster_is_whole_the_queue_moves_and_no_job_is_left_hanging(
    real_flux: None, tmp_path: Path
) -> None:
    soak = Soak(tmp_path, seed=1)
    try:
        outcome = soak.run(ORDER, settle=2.0)
    finally:
        soak.close()
    assert [fault.kind for fault in outcome.faults] == ORDER
    assert all(fault.moving_after < 60 for fault in outcome.faults), [(f.kind, f.moving_after) for f in outcome.faults]
    assert [fault.drained for fault in outcome.faults] == [""] * len(ORDER)  # no rank left drained
    assert outcome.active == []
    assert len(outcome.submitted) > 20
    unexplained = [job for job, result in outcome.ended.items() if result != "COMPLETED" and "(:" in result]
    assert unexplained == []  # every job that did not complete says why, in Flux's words
