"""A pod that is not one of the Job's, as the test kubelet's Node runs it (node.py): the keygen pod that
`pulumi up` creates, runs `flux keygen` in and reads the certificate from over the exec API. Its one
container runs as the Job's do (container.sh: its own PID, mount and UTS namespaces, as the pod's
user), in a network namespace of its own with only loopback (it needs no network); its emptyDir
volumes are directories of its own. Other kinds of volume are refused: such a pod needs a real node.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.kubelet import runtime
from tests.kubelet.pod import Container, Pod
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
    user = runtime.pod_user(spec)
    fields = {"HOSTNAME": name, "JOB_COMPLETION_INDEX": "", "metadata.name": name}
    env = container_env(container, Volumes(directory, [], None), fields, runtime.home(user))
    log = directory / "log"
    command = ["unshare", "--net", *runtime.container_command(
        name, dns_dir, directory / "scratch", container.get("workingDir", "/"), [*mounts, *runtime.user_options(user)],
        [*container["command"], *container.get("args", [])])]  # fmt: skip
    with log.open("ab") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=output, stdin=subprocess.DEVNULL)
    exec_prefix = [*runtime.setpriv(user), "env", "-i", *[f"{key}={value}" for key, value in env.items()]]
    main = Container(container["name"], process, log, exec_prefix)
    started = Pod(name, name, main, {}, [])
    started.pid  # noqa: B018 -- started: PID 1 exists (or the pod failed, and says why)
    return started
