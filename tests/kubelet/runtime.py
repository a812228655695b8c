"""How the test kubelet starts a container and enters it, for the Job's pods (pods.py) and a pod of its
own (single_pod.py) alike: container.sh's command line in new PID, mount and UTS namespaces, and the
pod's user, as container.sh switches to it and as an exec enters as it."""

from __future__ import annotations

from pathlib import Path

from tests.kubelet import image
from tests.kubelet.volumes import Manifest

CONTAINER = Path(__file__).with_name("container.sh")
User = tuple[int, int, int]
"""The pod's runAsUser, runAsGroup and supplementary group (its fsGroup)."""


def pod_user(pod_spec: Manifest) -> User | None:
    """The user the pod's securityContext runs it as, if it sets one."""
    identity = pod_spec.get("securityContext", {})
    if "runAsUser" not in identity:
        return None
    group = identity.get("runAsGroup", 0)
    return identity["runAsUser"], group, identity.get("fsGroup", group)


def home(user: User | None) -> str:
    """HOME as a container runtime sets it: root's, or / for a user the image does not know."""
    return "/root" if user is None or user[0] == 0 else "/"


def container_command(
    hostname: str, dns: Path, scratch: Path, workdir: str, options: list[str], argv: list[str]
) -> list[str]:
    """container.sh, as the first process of its own PID, mount and UTS namespaces, running `argv`;
    `options`: its mounts, user and gate (container.sh's usage), after the image's own Flux (image.py)."""
    return [
        "unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc", "bash", str(CONTAINER),
        "--hostname", hostname, "--dns", str(dns), "--scratch", str(scratch), "--workdir", workdir,
        *image.flux_mounts(), *options, "--", *argv,
    ]  # fmt: skip


def user_options(user: User | None) -> list[str]:
    """container.sh's options that make its command run as `user`."""
    return [] if user is None else ["--user", *map(str, user)]


def setpriv(user: User | None) -> list[str]:
    """What an exec runs its command under to be `user`, without privileges, as container.sh makes it."""
    if user is None:
        return []
    uid, gid, groups = user
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", f"--groups={groups}", "--no-new-privs",
            "--inh-caps=-all", "--bounding-set=-all", "--"]  # fmt: skip
