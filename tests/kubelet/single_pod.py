"""A pod that is not one of the Job's, as the test kubelet's Node runs it (node.py): the keygen pod that
`pulumi up` creates, runs `flux keygen` in and reads the certificate from over the exec API. Its one
container runs as the Job's do (container.sh: its own PID, mount and UTS namespaces, as the pod's
user), in a network namespace of its own with only loopback (it needs no network); its emptyDir
volumes are directories of its own. Other kinds of volume are refused: such a pod needs a real node.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.kubelet.pod import Container, Pod
from tests.kubelet.pods import CONTAINER
from tests.kubelet.volumes import Manifest, Volumes, container_env


def run(pod: Manifest, directory: Path, dns_dir: Path) -> Pod:
    """Starts the pod's container; the Pod it is (no readiness probe: Ready once running)."""
    name, spec = pod["metadata"]["name"], pod["spec"]
    (container,) = spec["containers"]
    directory.mkdir(parents=True)
    volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
    mounts = []
    for mount in container.get("volumeMounts", []):
        if "emptyDir" not in volumes[mount["name"]]:
            raise NotImplementedError(f"pod {name}: the test kubelet runs a lone pod's emptyDir volumes only")
        source = directory / "volumes" / mount["name"]
        source.mkdir(parents=True, mode=0o777)
        source.chmod(0o777)
        mounts += ["--mount", str(source), mount["mountPath"], "ro" if mount.get("readOnly") else "rw"]
    identity = spec.get("securityContext", {})
    user = [str(identity.get(key, 0)) for key in ("runAsUser", "runAsGroup", "fsGroup")]
    as_user = ["--user", *user] if "runAsUser" in identity else []
    fields = {"HOSTNAME": name, "JOB_COMPLETION_INDEX": "", "metadata.name": name}
    env = container_env(container, Volumes(directory, [], None), fields, "/root")
    log = directory / "log"
    command = [
        "unshare", "--net", "--mount", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc",
        "bash", str(CONTAINER), "--hostname", name, "--dns", str(dns_dir), "--scratch", str(directory / "scratch"),
        *mounts, *as_user, "--", *container["command"], *container.get("args", []),
    ]  # fmt: skip
    with log.open("ab") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=output, stdin=subprocess.DEVNULL)
    setpriv = ["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", f"--groups={user[2]}", "--"] if as_user else []
    exec_prefix = [*setpriv, "env", "-i", *[f"{key}={value}" for key, value in env.items()]]
    main = Container(container["name"], process, log, exec_prefix)
    started = Pod(name, name, main, {}, [])
    started.pid  # noqa: B018 -- started: PID 1 exists (or the pod failed, and says why)
    return started
