"""securityProfile restricted (issue 21): every pod the program creates satisfies Kubernetes' restricted
Pod Security Standard (tests/pod_security_standard.py encodes it from the documentation), what the
user sets against it is refused by key, and the entrypoint runs as a non-root user that may write only
its volumes."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from flux_minicluster.builders import keygen, manifests
from flux_minicluster.config import certificate, stack_file
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.conftest import config
from tests.harness import ROOT, refused_problems
from tests.pod_security_standard import violations
from tests.pods import Pods
from tests.schemas import assert_conforms

Json = dict[str, Any]


def spec_of(**overrides: Any) -> MiniClusterSpec:
    return load_spec({f"minicluster:{k}": v for k, v in config(**overrides).items()}, "dev")


def pods_of(spec: MiniClusterSpec) -> dict[str, Json]:
    """Every pod spec the program creates: the Job's brokers and the keygen pod."""
    objects = manifests.all_objects(spec, certificate.generate(spec.rank0_host).text())
    (job,) = [obj for obj in objects if obj["kind"] == "Job"]
    return {"broker": job["spec"]["template"]["spec"], "keygen": keygen.keygen_pod(spec)["spec"]}


def example_specs() -> Iterator[tuple[str, MiniClusterSpec]]:
    for path in sorted(ROOT.glob("Pulumi.*.yaml")):
        stack = yaml.safe_load(path.read_text())["config"]
        name = stack_file.stack_name(path)
        yield name, load_spec({**stack, "minicluster:securityProfile": "restricted"}, name)


@pytest.mark.parametrize(("name", "spec"), list(example_specs()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_pod_of_every_example_satisfies_the_restricted_profile(name: str, spec: MiniClusterSpec) -> None:
    for which, pod in pods_of(spec).items():
        assert violations(pod) == [], f"{name}: the {which} pod"
        assert_conforms({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod}, "1.29.0")


def test_the_check_finds_what_a_pod_as_the_image_says_breaks() -> None:
    found = violations(pods_of(spec_of())["broker"])
    assert "Privilege Escalation: flux-broker must set allowPrivilegeEscalation false" in found
    assert "Running as Non-root: flux-broker (or the pod) must set runAsNonRoot true" in found
    assert "Capabilities: flux-broker must drop ALL" in found
    assert "Seccomp: flux-broker (or the pod) must use RuntimeDefault or Localhost" in found


def test_restricted_pods_run_as_1000_with_their_volumes_group_owned() -> None:
    pod = pods_of(spec_of(securityProfile="restricted"))["broker"]
    assert pod["securityContext"] == {
        "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000, "fsGroupChangePolicy": "OnRootMismatch",
        "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"},
    }  # fmt: skip
    assert pod["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }


def test_the_ids_are_configurable_for_openshifts_namespace_ranges() -> None:
    pod = pods_of(spec_of(securityProfile="restricted", pod={"runAsUser": 1000650000, "fsGroup": 1000650000}))["keygen"]
    context = pod["securityContext"]
    assert (context["runAsUser"], context["runAsGroup"], context["fsGroup"]) == (1000650000, 1000, 1000650000)


def test_a_container_may_add_back_net_bind_service_only_and_keeps_its_own_settings() -> None:
    sidecar = {"name": "s", "image": "busybox", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]},
                                                                    "readOnlyRootFilesystem": True}}  # fmt: skip
    pod = pods_of(spec_of(securityProfile="restricted", containers=[sidecar]))["broker"]
    assert pod["initContainers"][0]["securityContext"] == {
        "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
    }  # fmt: skip
    assert violations(pod) == []


def test_a_flux_view_is_mounted_where_its_software_links_point() -> None:
    pod = pods_of(spec_of(securityProfile="restricted", fluxView={"enabled": True}))["broker"]
    mounts = pod["containers"][0]["volumeMounts"]
    view = {"name": "flux-view", "mountPath": "/opt/software", "subPath": "software", "readOnly": True}
    assert view in mounts
    assert violations(pod) == []


def test_without_the_profile_only_the_ids_set_are_given() -> None:
    assert pods_of(spec_of(pod={"runAsUser": 5000}))["broker"]["securityContext"] == {"runAsUser": 5000}
    assert "securityContext" not in pods_of(spec_of())["broker"]


REFUSED = [
    ("host-path-volume", {"volumes": {"data": {"path": "/data", "hostPath": "/srv"}}},
     "minicluster:volumes.data.hostPath: minicluster:securityProfile is restricted, which allows no hostPath volume"),
    ("host-path-state", {"command": None, "size": 1, "stateVolume": {"hostPath": "/srv/flux"}},
     "minicluster:stateVolume.hostPath: minicluster:securityProfile is restricted, which allows no hostPath volume"),
    ("root-user", {"pod": {"runAsUser": 0}}, "minicluster:pod.runAsUser is 0 (root), and minicluster:securityProfile is restricted"),
    ("privileged", {"securityContext": {"privileged": True}},
     "minicluster:securityContext.privileged asks for a privileged container, and minicluster:securityProfile is restricted"),
    ("escalation", {"containers": [{"name": "s", "image": "busybox", "securityContext": {"allowPrivilegeEscalation": True}}]},
     "minicluster:containers[0].securityContext.allowPrivilegeEscalation asks for privilege escalation"),
    ("root-container", {"securityContext": {"runAsUser": 0}}, "minicluster:securityContext.runAsUser asks for running as root"),
    ("may-run-as-root", {"securityContext": {"runAsNonRoot": False}}, "minicluster:securityContext.runAsNonRoot asks for a container that may run as root"),
    ("capability", {"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}},
     "minicluster:securityContext.capabilities asks for adding a capability other than NET_BIND_SERVICE"),
    ("unconfined", {"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
     "minicluster:securityContext.seccompProfile asks for a seccomp profile other than RuntimeDefault or Localhost"),
    ("selinux-type", {"securityContext": {"seLinuxOptions": {"type": "spc_t"}}},
     "minicluster:securityContext.seLinuxOptions asks for an SELinux type, user or role of its own"),
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "expected"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_what_the_restricted_profile_forbids_is_refused_naming_the_key(overrides: Json, expected: str) -> None:
    problems = refused_problems(config(securityProfile="restricted", **overrides))
    assert any(problem.startswith(expected) for problem in problems), problems


# -- the entrypoint as a non-root user -------------------------------------------------------------

USER = 4242  # an id in no /etc/passwd, as Kubernetes and OpenShift give them


@pytest.fixture
def pod_dir() -> Iterator[Path]:
    """Readable by everyone, writable by root only: the pod's filesystem as its user sees it. (pytest's
    own tmp_path is private to root.)"""
    path = Path(tempfile.mkdtemp(prefix="restricted-pod-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.mark.skipif(os.getuid() != 0, reason="switching to another user needs root")
@pytest.mark.parametrize("rank", [0, 1])
def test_the_entrypoint_runs_as_a_non_root_user_writing_only_its_volumes(pod_dir: Path, rank: int) -> None:
    pods = Pods(pod_dir, securityProfile="restricted", user=USER)
    state = pod_dir / f"state-{rank}"
    state.mkdir(mode=0o777)  # an emptyDir: world-writable, as the kubelet makes it
    state.chmod(0o777)
    before = {path for path in pod_dir.rglob("*") if not path.is_relative_to(state)}
    run = pods.run(rank)
    assert run.status == 0, run.stderr
    assert run.start[0] == "start"
    written = {path for path in pod_dir.rglob("*") if not path.is_relative_to(state)} - before
    assert {path.parent for path in written} <= {pods.logs}, written  # the stand-ins' own logs, outside the pod
    private = state / "curve.cert"
    assert (private.stat().st_uid, private.stat().st_mode & 0o777) == (USER, 0o600)
    assert (state / "R").stat().st_uid == USER
