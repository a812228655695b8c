"""securityProfile restricted on real Flux: the pods run as uid and gid 1000, which the image does not
know (no passwd or group entry), without privileges, and write only their volumes (tests/kubelet)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.kubelet.pod import Pod, wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
Make = Callable[..., Kubelet]
USER = 1000


def written_outside_volumes(pod: Pod) -> list[str]:
    """What the pod's user created or changed outside its volumes: in its overlays of the machine's
    directories and in its own /tmp (the container's writable layer)."""
    scratch = pod.log_path.parent / "scratch"
    found = []
    for path in scratch.rglob("*"):
        if not path.is_symlink() and path.stat().st_uid == USER:
            found.append(str(path.relative_to(scratch)))
    return found


def test_the_command_runs_as_the_pods_user_who_has_no_passwd_entry(minicluster: Make) -> None:
    command = "sh -c 'id -u; id -g; getent passwd 1000 || echo nobody-known'"
    cluster = minicluster(size=2, tasks=2, securityProfile="restricted", command=command)
    pods = cluster.start_all()
    assert [pod.wait(timeout=60) for pod in pods] == [0, 0]
    printed = [line for line in pods[0].log.splitlines() if line in ("1000", "nobody-known")]
    assert sorted(printed) == ["1000", "1000", "1000", "1000", "nobody-known", "nobody-known"]
    assert [written_outside_volumes(pod) for pod in pods] == [[], []]


def test_a_persistent_restricted_instance_takes_work_and_its_state_is_the_users(minicluster: Make) -> None:
    cluster = minicluster(size=2, command=None, securityProfile="restricted", stateVolume={"claimName": "state"})
    rank0, worker = cluster.start_all()
    wait_until(lambda: rank0.ready() and worker.ready(), "the brokers to be ready", 30)
    assert rank0.flux("run", "-N2", "id", "-u").split() == ["1000", "1000"]
    saved = cluster.claim("state") / "dev"
    assert saved.stat().st_uid == USER and (saved / "content.sqlite").stat().st_uid == USER
    assert (cluster.claim("state") / "dev.lock").stat().st_uid == USER  # the claim is the user's through fsGroup
    assert rank0.exec("id", "-u").stdout.strip() == "1000"  # kubectl exec is the pod's user too
    assert rank0.terminate() == 143 and worker.terminate() == 143
    assert [written_outside_volumes(pod) for pod in (rank0, worker)] == [[], []]
