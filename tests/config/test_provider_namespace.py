"""The Kubernetes provider's default namespace (kubernetes:namespace) is not the MiniCluster's: the
provider puts there only objects that name no namespace, and every object of the MiniCluster names its
own (minicluster:namespace, `default` unless set). A stack that sets the one and not the other is told."""

from __future__ import annotations

from typing import Any

from flux_minicluster.config.loader import load_spec, namespace_warning

BASE = {"minicluster:image": "flux:1", "minicluster:command": "hostname"}


def warning(**config: Any) -> str | None:
    raw = {**BASE, **config}
    return namespace_warning(raw, load_spec(raw, "dev"))


def test_a_provider_namespace_without_a_minicluster_namespace_is_warned_of() -> None:
    assert warning(**{"kubernetes:namespace": "hpc"}) == (
        "kubernetes:namespace is 'hpc', but MiniCluster 'dev' goes to namespace 'default' (minicluster:namespace, "
        "unset, has that default): set minicluster:namespace to 'hpc' to put it there"
    )


def test_a_minicluster_namespace_set_apart_from_the_providers_is_the_users_choice() -> None:
    assert warning(**{"kubernetes:namespace": "hpc", "minicluster:namespace": "flux"}) is None


def test_a_provider_namespace_that_is_the_default_one_is_no_news() -> None:
    assert warning(**{"kubernetes:namespace": "default"}) is None


def test_no_provider_namespace_is_no_news() -> None:
    assert warning() is None
