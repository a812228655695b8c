"""broker.toml: the bootstrap table every broker reads (issue 3)."""

from __future__ import annotations

import tomllib
from typing import Any

import hostlist
import pytest

from flux_minicluster.builders.manifests import broker_toml
from flux_minicluster.config.loader import load_spec
from tests.conftest import config


def broker(**overrides: Any) -> dict[str, Any]:
    raw = {f"minicluster:{key}": value for key, value in config(**overrides).items()}
    return tomllib.loads(broker_toml(load_spec(raw, "dev")))


@pytest.mark.parametrize(
    ("size", "expected"),
    [(1, "dev-0"), (2, "dev-[0-1]"), (10, "dev-[0-9]"), (1000, "dev-[0-999]")],
)
def test_hostlist_names_every_rank_in_order(size: int, expected: str) -> None:
    hosts = broker(size=size)["bootstrap"]["hosts"]
    assert hosts == [{"host": expected}]
    assert hostlist.expand_hostlist(expected) == [f"dev-{rank}" for rank in range(size)]


def test_hostlist_reaches_max_size_so_the_instance_can_grow() -> None:
    (entry,) = broker(size=2, maxSize=8, command=None)["bootstrap"]["hosts"]
    assert hostlist.expand_hostlist(entry["host"]) == [f"dev-{rank}" for rank in range(8)]


def test_names_with_digits_and_dashes_keep_rank_order() -> None:
    (entry,) = broker(name="job-2-b3", size=12)["bootstrap"]["hosts"]
    assert hostlist.expand_hostlist(entry["host"])[10:] == ["job-2-b3-10", "job-2-b3-11"]


def test_connect_uri_uses_service_namespace_and_cluster_domain() -> None:
    bootstrap = broker(serviceName="flux-net", namespace="hpc", clusterDomain="corp.example")["bootstrap"]
    assert bootstrap["default_connect"] == "tcp://%h.flux-net.hpc.svc.corp.example:%p"


def test_defaults_bind_eth0_on_port_8050_with_the_private_certificate_copy() -> None:
    bootstrap = broker()["bootstrap"]
    assert bootstrap["default_bind"] == "tcp://eth0:%p"
    assert bootstrap["default_port"] == 8050
    assert bootstrap["default_connect"] == "tcp://%h.dev.default.svc.cluster.local:%p"
    assert bootstrap["curve_cert"] == "/var/lib/minicluster/curve.cert"


def test_interface_and_port_are_settings() -> None:
    bootstrap = broker(networkInterface="ib0", port=9000)["bootstrap"]
    assert (bootstrap["default_bind"], bootstrap["default_port"]) == ("tcp://ib0:%p", 9000)


def test_resource_file_is_the_one_the_entrypoint_writes() -> None:
    assert broker()["resource"] == {"path": "/var/lib/minicluster/R", "noverify": True}


def test_the_overlay_settings_are_brokers_toml_tbon_table() -> None:
    assert broker()["tbon"] == {"connect_timeout": "5s", "zmqdebug": 1}  # flux-config-tbon(5); Flux's own topology
    binomial = broker(topology="binomial", connectTimeout="1m")["tbon"]
    assert binomial == {"connect_timeout": "1m", "zmqdebug": 1, "topo": "binomial"}


def test_a_worker_that_hears_nothing_from_rank_0_for_a_minute_starts_its_broker_again() -> None:
    """flux-config-heartbeat(5): the worker drops its parent and exits, and its entrypoint starts it again.
    Flux's own 5 minutes held every job that needs all the nodes while rank 0's replacement ignored a
    worker (lifecycle.PARENT_SILENCE says how)."""
    assert broker()["heartbeat"] == {"timeout": "60s"}


OWN_BROKER_TOML = '[bootstrap]\ncurve_cert = "/var/lib/minicluster/curve.cert"\nhosts = [{ host = "dev-[0-3]" }]\n'


def test_a_broker_config_of_ones_own_gets_the_overlay_tables_it_lacks() -> None:
    parsed = broker(brokerConfig=OWN_BROKER_TOML, connectTimeout="9s")
    assert parsed["tbon"] == {"connect_timeout": "9s", "zmqdebug": 1}
    assert parsed["heartbeat"] == {"timeout": "60s"}
    assert parsed["bootstrap"]["hosts"] == [{"host": "dev-[0-3]"}]


def test_a_broker_config_with_its_own_heartbeat_table_keeps_it_and_gets_the_tbon_table() -> None:
    parsed = broker(brokerConfig=OWN_BROKER_TOML + '[heartbeat]\ntimeout = "5m"\n')
    assert (parsed["heartbeat"], parsed["tbon"]) == ({"timeout": "5m"}, {"connect_timeout": "5s", "zmqdebug": 1})


def test_a_broker_config_with_its_own_overlay_tables_is_used_as_written() -> None:
    own = OWN_BROKER_TOML + '[tbon]\ntopo = "kary:4"\n[heartbeat]\ntimeout = "2m"\n'
    spec = load_spec({f"minicluster:{k}": v for k, v in config(brokerConfig=own).items()}, "dev")
    assert broker_toml(spec) == own
