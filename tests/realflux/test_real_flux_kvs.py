"""What flux-core's KVS does on a rank above 0 at its first read of a namespace, pinned on real Flux
because a worker's rc1 relies on it (worker_rc.sh, hold_kvs_root): where flux-core changes it, this
fails, and the read in rc1 may go."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.flux_instance import instance
from tests.kubelet.image import FLUX

pytestmark = pytest.mark.realflux

FIRST_READ = Path(__file__).with_name("kvs_first_read.py")


def test_a_workers_first_read_of_a_namespace_can_miss_a_commit_until_the_next_one(real_flux: None) -> None:
    """flux-core 0.88's kvs module, above rank 0, takes a namespace's root from upstream when first
    asked, and only then subscribes to the events of its commits: a commit in between is missed, and the
    rank reads the root before it until the next commit. A worker asked first by the undrain, as rank 0
    started a batch job, missed the job's R: its shell failed, `error getting R from job-info watch
    response: No such file or directory` (3 of 456 batch runs here; none of 900 since rc1 reads the KVS)."""
    done = instance(2).run(str(FLUX), "python", str(FIRST_READ), timeout=150)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {"rounds": seen["rounds"], "rank0_reads_it": True, "rank1_reads_it_after_the_next_commit": True}
