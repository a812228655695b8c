"""A stack whose cluster is gone (deleted, or no longer answering), and the way out pulumi-kubernetes's
errors name: PULUMI_K8S_DELETE_UNREACHABLE=true drops from the state whatever cannot be reached. The
MiniCluster's own resources that talk to the cluster follow it, each in its provider process as the
engine starts it (the variable reaches it from `pulumi`'s environment), with the real client against
an address where nothing answers: the JobDeletion's delete, and the guard's and the Scale's refresh.
Without the variable each still fails, saying why. On the real engines: tests/realengine/node/
test_cluster_gone.py."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.builders.names import labels
from flux_minicluster.resources import deletion, scale, scheduling
from flux_minicluster.resources.wire import DELETE_UNREACHABLE
from tests.kube_api import refused_url, write_kubeconfig
from tests.kube_api.samples import DEV, JOB_REVISION
from tests.provider_plugin import ProviderPlugin, grpc_error

SELECTOR = labels(DEV, "broker")
PROVIDERS = {
    "JobDeletion": (deletion.JobDeletionProvider(), {"namespace": "default", "job": "dev", "selector": SELECTOR,
                                                     "identity": "a" * 64, "timeout": 90}),
    "SchedulingGuard": (scheduling.SchedulingGuardProvider(), {
        "namespace": "default", "job": "dev", "selector": SELECTOR, "size": 4, "scheduleTimeout": 1,
        "jobUrn": "urn:pulumi:dev::minicluster::kubernetes:batch/v1:Job::dev-job", "revision": JOB_REVISION}),
    "Scale": (scale.ScaleProvider(), {
        "namespace": "default", "job": "dev", "jobUid": "uid-1", "scaleConfig": "dev-scale-x1", "selector": SELECTOR,
        "size": 4, "maxSize": 8, "shrinkPolicy": "wait", "shrinkTimeout": 600, "jobTimeout": 60,
        "scheduleTimeout": 1}),
}  # fmt: skip


@pytest.fixture(scope="module")
def gone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_kubeconfig(tmp_path_factory.mktemp("gone") / "kubeconfig", {"gone": refused_url()})


@contextmanager
def serving(kind: str, kubeconfig: Path, dropping: bool) -> Iterator[ProviderPlugin]:
    """The provider process of `kind`, started with DELETE_UNREACHABLE "true" if `dropping`."""
    provider, _ = PROVIDERS[kind]
    env = {"KUBECONFIG": str(kubeconfig), **({DELETE_UNREACHABLE: "true"} if dropping else {})}
    process = ProviderPlugin(provider, f"pulumi-python:dynamic/minicluster:{kind}", env)
    try:
        yield process
    finally:
        process.close()


@pytest.fixture(params=[True, False], ids=["dropped", "kept"])
def dropping(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def props(kind: str, served: ProviderPlugin, **overrides: Any) -> dict[str, Any]:
    return served.with_provider({**PROVIDERS[kind][1], **overrides})


def test_the_job_deletion_is_dropped_unwaited_for_or_fails_saying_why(gone_cluster: Path, dropping: bool) -> None:
    with serving("JobDeletion", gone_cluster, dropping) as served:
        delete = functools.partial(served.delete, "default/dev", props("JobDeletion", served))
        if dropping:
            delete()
        else:
            said = grpc_error(delete)
            assert "cannot reach the Kubernetes cluster (Connection refused) while waiting for the Job" in said


@pytest.mark.parametrize(("kind", "doing"), [("SchedulingGuard", "reading the guarded Job"),
                                             ("Scale", "reading the Job's size")])  # fmt: skip
def test_a_refresh_drops_it_or_fails_saying_why(gone_cluster: Path, dropping: bool, kind: str, doing: str) -> None:
    with serving(kind, gone_cluster, dropping) as served:
        read = functools.partial(served.read, "default/dev", props(kind, served))
        if dropping:
            assert read()[0] == ""  # no id: the engine drops it from the state
        else:
            assert f"cannot reach the Kubernetes cluster (Connection refused) while {doing}" in grpc_error(read)


def test_a_cluster_whose_context_is_gone_is_as_unreachable(tmp_path: Path) -> None:
    """`kind delete cluster` takes its kubeconfig context with it."""
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"other": refused_url()})
    with serving("JobDeletion", kubeconfig, True) as served:
        served.delete("default/dev", props("JobDeletion", served, kubeContext="kind-gone"))
