"""What brokers read at start in a resizable cluster (issue 11): the current size and quorum come from
the scale ConfigMap, which a resize rewrites, not from the pod's environment. The real entrypoint
under bash with the stand-in `flux` that records its arguments; resize.sh itself runs on real Flux
(tests/realflux/test_real_resize.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pods import Pods

# -- what brokers read at start -------------------------------------------------------------------


def test_brokers_read_the_size_and_quorum_from_the_scale_files_not_their_environment(tmp_path: Path) -> None:
    pods = Pods(tmp_path, mode="interactive", size=4, maxSize=8)
    assert "MC_SIZE" not in pods.env
    (tmp_path / "scale" / "size").write_text("6")  # a resize rewrote the ConfigMap
    (tmp_path / "scale" / "quorum").write_text("6")
    run = pods.run(0)
    assert "-Sbroker.quorum=6" in run.start
    assert "minicluster[rank 0]: rank 0 of 6 in dev-[0-7], mode interactive" in run.stderr


@pytest.mark.parametrize("rank", [6, 7])
def test_a_rank_beyond_the_current_size_says_so_and_starts_its_broker(tmp_path: Path, rank: int) -> None:
    pods = Pods(tmp_path, command=None, size=6, maxSize=8)
    run = pods.run(rank)
    assert f"rank {rank} is beyond the current size 6: the cluster is being resized" in run.stderr
    assert run.subcommand("start")


def test_a_pod_without_a_readable_size_fails_before_starting_flux(tmp_path: Path) -> None:
    pods = Pods(tmp_path)
    (tmp_path / "scale" / "size").write_text("four")
    run = pods.run(1)
    assert run.status == 1
    assert "holds 'four', not a size" in run.stderr
    assert run.subcommand("start") == []
