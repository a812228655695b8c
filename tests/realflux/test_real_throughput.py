"""The throughput benchmark (tests/bench/throughput.py), short, in CI: every job it pushes through a
persistent MiniCluster and through `flux start` runs to success (a job that fails fails the run), and
the rate it reports is the jobs over the time they took."""

from __future__ import annotations

import pytest

from tests.bench.throughput import floor_rate, minicluster_rate

pytestmark = pytest.mark.realflux


def test_fifty_jobs_run_through_the_minicluster_and_through_flux_start(real_flux: None) -> None:
    # 50 jobs of `true` take a second or two on two cores: anything under a job a second or above a
    # thousand would be no measurement of them.
    assert 1 < minicluster_rate(4, 50) < 1000
    assert 1 < floor_rate(4, 50) < 1000
