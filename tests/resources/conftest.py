"""The resources' providers over gRPC against the API stand-in: each test starts from a cluster reset."""

from __future__ import annotations

import pytest

from tests.kube_api import Cluster, StandIn


@pytest.fixture
def api(api_server: StandIn) -> Cluster:
    return api_server.cluster.reset()
