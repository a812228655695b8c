"""Pods that cannot start, under a real `pulumi up` on the real node: `pulumi up` says why, and when,
instead of waiting out jobTimeout (an hour by default) or keygenTimeout with no more than that the
containers are not ready.

- An image that cannot be pulled (the node's containerd answers "not found" for an image it has not
  imported): the Job's pods all have their node, and pulumi-kubernetes waits for the Job; the flux
  view's init container holds the keygen pod Pending. The dynamic provider's error is its line, without
  a traceback. The keeper's pod (keeper.image) holds its Deployment's await, which says why as it
  waits, and ends at a Ctrl-C.
- A Secret a volume mounts, a Secret key the environment reads, or the pods' PriorityClass,
  RuntimeClass or ServiceAccount, that is not there: the admission check refuses it before anything is
  created. With the check off, the pods wait in
  ContainerCreating, and `pulumi up` ends at jobTimeout: the scheduling guard, which the engine waits
  for too, does not follow them past it.
- While it waits, past its first seconds, `pulumi up` says how it goes (a line of the stack's): the
  Scale of an elastic cluster how many brokers are ready and why the others wait, the keygen pod
  where it is.

Destroy then leaves nothing."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Callable

import pytest
from kubernetes import client

from tests.engines.images import APP_WITHOUT_FLUX
from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.stacks import StackOnRealNode

MISSING = "minicluster.test/no-such-image:1"
"""An image the node does not have, from a registry it cannot reach."""


def test_a_job_whose_image_cannot_be_pulled_is_stopped_after_schedule_timeout(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    """With `keygen: local` no keygen pod tries the image first: the Job's pods are the first to pull it."""
    config = {**example("dev"), "size": 2, "tasks": 2, "keygen": "local", "image": MISSING, "scheduleTimeout": 5}
    cluster = stack_on_real_node("dev", **config)  # jobTimeout: 3600 s, past the test's own limit
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    said = refused.stdout
    assert (
        f"the Job's pods could not start for 5s (minicluster:scheduleTimeout): container 'flux-broker' cannot pull "
        f"image '{MISSING}' (" in said
    )
    assert "check the image's name and tag, and minicluster:pod.imagePullSecrets. The Job was stopped" in said
    wait_until(lambda: cluster.condition("Failed") == "True", "the stopped Job to fail", 30, poll=0.2)
    cluster.stack.destroy()
    assert cluster.left() == {}


def test_a_flux_view_image_that_cannot_be_pulled_fails_the_keygen_pod_at_once(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    view = {"enabled": True, "image": MISSING}
    config = {**example("dev"), "size": 2, "tasks": 2, "image": APP_WITHOUT_FLUX, "fluxView": view}
    cluster = stack_on_real_node("dev", **config)  # keygenTimeout: 300 s, the test's own limit
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    assert f"the keygen pod's container 'flux-view' cannot pull image '{MISSING}' (" in refused.stdout
    assert "keygenTimeout" not in refused.stdout  # not a timeout, and no advice to raise it
    # The dynamic provider's failure is its error's line, not a traceback that starts with the SDK's frames.
    assert "Traceback" not in refused.stdout + refused.stderr
    assert "error: flux_minicluster.cluster.keygen_pod.KeygenError: the keygen pod's container" in refused.stdout
    cluster.stack.destroy()
    assert cluster.left() == {}


def test_a_keeper_image_that_cannot_be_pulled_is_said_while_pulumi_up_waits_and_ctrl_c_ends_it(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    """pulumi-kubernetes awaits the keeper's Deployment for its 10 minutes (a large image may pull that
    long), saying the pod's trouble every 10 s; its await ends at a Ctrl-C (SIGINT to `pulumi`). Once the
    image is fixed, the next `pulumi up` rolls the keeper out."""
    cluster = stack_on_real_node(
        "kept", **{**example("interactive"), "size": 2, "keeper": {"enabled": True, "image": MISSING}}
    )
    argv = ["pulumi", "up", "--yes", "--skip-preview", "--stack", cluster.stack.name, "--non-interactive"]
    up = subprocess.Popen(argv, cwd=cluster.stack.project, env=cluster.stack.env, stdout=subprocess.PIPE, text=True)
    assert up.stdout is not None
    limit = threading.Timer(180, up.kill)  # the line below reads until pulumi ends: no longer than this
    limit.start()
    try:
        pulling = ("[ErrImagePull]", "[ImagePullBackOff]")  # which one, the 10 s tick decides
        said = next((line for line in up.stdout if "kept-keeper" in line and any(r in line for r in pulling)), "")
        assert MISSING in said and up.poll() is None  # said within the wait, not at its end
        up.send_signal(signal.SIGINT)
        rest, _ = up.communicate(timeout=60)
    finally:
        limit.cancel()
    assert up.returncode != 0 and "timed out" not in rest
    cluster.stack.configure({**cluster.stack.config, "keeper": {"enabled": True}})
    cluster.stack.up()
    cluster.stack.destroy()
    assert cluster.left() == {}


def test_a_secret_volume_that_is_not_there_is_refused_before_anything_is_created(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    volumes = {"data": {"path": "/data", "secret": "no-such-secret"}}
    cluster = stack_on_real_node("dev", **example("dev"), volumes=volumes)
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    assert (
        "the Secret 'no-such-secret' that minicluster:volumes.data.secret names does not exist in namespace "
        f"'{cluster.namespace}'"
    ) in refused.stdout
    assert cluster.left() == {}
    assert cluster.stack.resource_types() == ["pulumi:pulumi:Stack"]


def test_a_secret_key_the_environment_reads_that_is_not_there_is_refused_before_anything_is_created(
    stack_on_real_node: Callable[..., StackOnRealNode], admin: client.ApiClient, namespace: str
) -> None:
    """Of the Secret the check reads which keys it has, from the real API server's answer."""
    secret = client.V1Secret(metadata=client.V1ObjectMeta(name="lammps"), data={"other": ""})
    client.CoreV1Api(admin).create_namespaced_secret(namespace, secret)
    variables = {"LAMMPS_LICENSE": {"name": "lammps", "key": "license"}}
    cluster = stack_on_real_node("dev", **example("dev"), environmentFromSecrets=variables)
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    said = "the Secret 'lammps' that minicluster:environmentFromSecrets.LAMMPS_LICENSE.name names has no key 'license'"
    assert said in refused.stdout
    assert cluster.stack.resource_types() == ["pulumi:pulumi:Stack"]


@pytest.mark.parametrize(
    ("key", "kind", "name"),
    [("priorityClassName", "PriorityClass", "hpc-batch"), ("runtimeClassName", "RuntimeClass", "kata"),
     ("serviceAccountName", "ServiceAccount", "flux")],
)  # fmt: skip
def test_a_class_or_account_the_pods_name_that_is_not_there_is_refused_by_its_key(
    stack_on_real_node: Callable[..., StackOnRealNode], key: str, kind: str, name: str
) -> None:
    """The real API server's admission refuses the sample pods' dry run for it (one such refusal per pod: its
    first plugin to refuse); the Job controller would meet it at every pod, which the scheduling guard
    stops only after scheduleTimeout."""
    cluster = stack_on_real_node("dev", **example("dev"), pod={key: name})
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    where = f"in namespace {cluster.namespace!r}" if kind == "ServiceAccount" else "in the cluster"
    assert f"the {kind} {name!r} that minicluster:pod.{key} names does not exist {where}" in refused.stdout
    assert cluster.stack.resource_types() == ["pulumi:pulumi:Stack"]


def test_with_admission_off_pods_held_by_a_missing_volume_end_pulumi_up_at_job_timeout(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    volumes = {"data": {"path": "/data", "secret": "no-such-secret"}}
    settings = {"size": 2, "tasks": 2, "admission": "off", "volumes": volumes, "jobTimeout": 10}
    cluster = stack_on_real_node("dev", **{**example("dev"), **settings})
    ended = cluster.stack.up(check=False)  # the test's limit: 300 s
    assert ended.returncode != 0
    assert "'dev' timed out waiting to be Ready" in ended.stdout  # the Job's own wait, at jobTimeout
    cluster.stack.destroy()
    assert cluster.left() == {}


def test_an_elastic_cluster_whose_pods_wait_says_how_it_goes_and_why_at_job_timeout(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    """pulumi-kubernetes does not await an elastic cluster's Job: its Scale does, and once that has lasted
    a few seconds it says how many brokers are ready and why the others wait, as it goes."""
    volumes = {"data": {"path": "/data", "secret": "no-such-secret"}}
    settings = {"size": 2, "admission": "off", "volumes": volumes, "jobTimeout": 15}
    cluster = stack_on_real_node("interactive", **{**example("interactive"), **settings})
    ended = cluster.stack.up(check=False)
    assert ended.returncode != 0
    waiting = "0 of 2 brokers are ready; rank 0: ContainerCreating; rank 1: ContainerCreating"
    assert [line for line in ended.stdout.splitlines() if "pulumi:pulumi:Stack" in line and line.endswith(waiting)]
    assert f"ResizeFailed: after 15s (minicluster:jobTimeout) {waiting}" in ended.stdout
    cluster.stack.destroy()
    assert cluster.left() == {}


def test_a_keygen_pod_no_node_takes_says_so_while_it_waits_then_stops_at_schedule_timeout(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    settings = {"admission": "off", "pod": {"nodeSelector": {"pool": "nowhere"}}, "scheduleTimeout": 10}
    cluster = stack_on_real_node("dev", **{**example("dev"), **settings})
    ended = cluster.stack.up(check=False)
    assert ended.returncode != 0
    said = [line for line in ended.stdout.splitlines() if "pulumi:pulumi:Stack" in line and "the keygen pod" in line]
    assert said and "is waiting for a node (Unschedulable: 0/" in said[0]
    assert "didn't match Pod's node affinity/selector" in said[0]
    assert "the keygen pod could not be scheduled for 10s (minicluster:scheduleTimeout)" in ended.stdout
    cluster.stack.destroy()
    assert cluster.left() == {}
