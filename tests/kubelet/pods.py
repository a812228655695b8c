"""A MiniCluster's pods on this machine, as the Job controller and the kubelet run them, with real Flux.

From the objects the builders render (manifests.all_objects, what `pulumi up` creates), each pod of
the Indexed Job gets:
  - a network namespace with `eth0` on the cluster's bridge and its name in the hosts file (network.py);
  - its hostname `<job>-<index>`, JOB_COMPLETION_INDEX and HOSTNAME, and the Flux container's env;
  - the Flux container's volumes mounted at its mountPaths (volumes.py, container.sh), as its user;
  - the container's command as PID 1 of its own PID namespace: its stdout and stderr are the pod's
    log, and MC_LOG_SINK (/proc/1/fd/2) is that log too.
The pods themselves are pod.py's. The Flux container runs, and so do the native sidecars of the
MiniCluster's own image (the autoscaler's), started first, each in its own PID and mount namespaces in
the pod's network namespace, with its own mounts; other init containers and sidecars need images this
machine does not have.

Everything is bounded in time, and `close` (also on a failed test: the tests' `minicluster` fixture calls it) kills
every process and removes every namespace and mount the cluster made: killing a PID namespace's
first process kills all of it, and its mounts go with its last process.
"""

from __future__ import annotations

import contextlib
import fcntl
import secrets
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from flux_minicluster.builders import manifests
from flux_minicluster.builders.names import BROKER_CONTAINER
from flux_minicluster.config import certificate, paths, sizing
from flux_minicluster.config.spec import MiniClusterSpec
from tests.auto_names import auto_name
from tests.kube_api.in_cluster import InCluster
from tests.kube_api.server import StandIn
from tests.kubelet import runtime
from tests.kubelet.network import PodNetwork
from tests.kubelet.pod import Container, Pod, end_all, wait_until
from tests.kubelet.volumes import Manifest, Volumes, container_env


class ApiReach(Protocol):
    """How the pods reach an API server: its address in the pod network, and their account's files."""

    host: str
    port: int

    def service_account(self, namespace: str, name: str, rules: list[Manifest]) -> Path: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class Sandbox:
    """A pod before its containers: its name, its own directory, its network namespace and address."""

    index: int
    name: str
    hostname: str
    directory: Path
    namespace: str
    address: str


class Kubelet:
    """The pods of one MiniCluster's Job on this machine."""

    def __init__(
        self, tmp: Path, spec: MiniClusterSpec, cluster_domain: str = "cluster.local",
        objects: list[Manifest] | None = None,
    ) -> None:  # fmt: skip
        """`objects`: the MiniCluster's objects; by default the builders' own, named as pulumi up names
        them, with a new certificate. `[]`: none yet, until `load` (node.py, for a real `pulumi up`,
        loads what the API server holds once the Job's first pod is bound)."""
        self.tmp, self.spec, self.cluster_domain = tmp, spec, cluster_domain
        self.api: ApiReach | None = None
        tmp.mkdir(parents=True, exist_ok=True)
        self.network = PodNetwork(tmp / "dns")
        self.pods: list[Pod] = []
        self.started_at = 0.0
        self.objects: list[Manifest] = []
        if objects is None:
            objects = manifests.all_objects(spec, certificate.generate(spec.rank0_host).text(), auto_name)
        if objects:
            self.load(objects)

    def load(self, objects: list[Manifest]) -> None:
        """The Job whose pods this kubelet runs, and the ConfigMaps and Secrets they mount."""
        self.objects = objects
        self.job = next(obj for obj in self.objects if obj["kind"] == "Job")
        self.pod_spec: Manifest = self.job["spec"]["template"]["spec"]
        self.container: Manifest = next(c for c in self.pod_spec["containers"] if c["name"] == BROKER_CONTAINER)
        self.user = runtime.pod_user(self.pod_spec)
        fs_group = self.pod_spec.get("securityContext", {}).get("fsGroup")
        self.volumes = Volumes(self.tmp / "cluster", self.objects, fs_group)

    def reach(self, stand_in: StandIn) -> InCluster:
        """From now on the pods reach `stand_in` as they reach the API server: its address in their
        environment, and their service account's token, CA and namespace mounted where Kubernetes
        mounts them (when the pod spec asks for a token), the token's rights being its Role's."""
        reached = InCluster(stand_in, self.tmp / "api", self.network)
        self.reach_api(reached)
        return reached

    def reach_api(self, api: ApiReach) -> None:
        """From now on the pods reach the API server `api` makes reachable (node.py: a real one)."""
        self.api = api

    def _account_dir(self) -> Path:
        """The pods' service account as the kubelet mounts it: its token (from the API server, whose
        RBAC then knows it by the Roles bound to the account), the cluster's CA and the namespace."""
        account = self.pod_spec.get("serviceAccountName") or "default"
        if self.api is None:
            raise RuntimeError("the pod's service account token comes from the API server: call reach() first")
        bound = {
            obj["roleRef"]["name"]
            for obj in self.objects
            if obj["kind"] == "RoleBinding"
            and {"kind": "ServiceAccount", "name": account, "namespace": self.namespace} in obj["subjects"]
        }
        rules = [rule for obj in self.objects if obj["kind"] == "Role" and obj["metadata"]["name"] in bound
                 for rule in obj["rules"]]  # fmt: skip
        return self.api.service_account(self.namespace, account, rules)

    def _automounted(self, container: Manifest) -> list[str]:
        """Kubernetes' automount of the account's token, in each container that mounts nothing of its own
        there, unless the pod asks for none (a kubelet mounts it only when the pod names an account here:
        tests without an API server have none to mount)."""
        mounted = any(m["mountPath"] == paths.SERVICE_ACCOUNT_DIR for m in container.get("volumeMounts", []))
        asked = self.pod_spec.get("automountServiceAccountToken") is not False
        if mounted or not asked or self.api is None or not self.pod_spec.get("serviceAccountName"):
            return []
        return ["--mount", str(self._account_dir()), paths.SERVICE_ACCOUNT_DIR, "ro"]

    @property
    def scale_config(self) -> str:
        """The scale ConfigMap's name, as the pods mount it."""
        return str(next(v for v in self.pod_spec["volumes"] if v["name"] == paths.SCALE_VOLUME)["configMap"]["name"])

    @property
    def namespace(self) -> str:
        return self.spec.namespace

    def hostname(self, index: int) -> str:
        return f"{self.job['metadata']['name']}-{index}"

    def fqdn(self, index: int) -> str:
        return f"{self.hostname(index)}.{self.pod_spec['subdomain']}.{self.namespace}.svc.{self.cluster_domain}"

    def start_all(self) -> list[Pod]:
        """The Job's pods as the Job controller creates them: one per index up to its parallelism, each
        with its address before any container starts, their containers started at one instant
        (`started_at`, time.time())."""
        sandboxes = [self._sandbox(index) for index in range(self.job["spec"]["parallelism"])]
        gate = self.tmp / f"gate-{len(self.pods)}"
        with gate.open("w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            pods = [self._run(sandbox, gate) for sandbox in sandboxes]
            for pod in pods:
                wait_until(lambda pod=pod: pod.at_gate.exists() or not pod.running(), f"{pod.name} to be set up", 30)
            self.started_at = time.time()
        return pods

    def start_all_ready(self, timeout: float = 30) -> list[Pod]:
        """start_all, then until every broker is ready (each pod's readiness probe says so)."""
        pods = self.start_all()
        wait_until(lambda: all(pod.ready() for pod in pods), "every broker to be ready", timeout)
        return pods

    def start(self, index: int, env: dict[str, str] | None = None, name: str | None = None) -> Pod:
        """A new pod for `index` (a replacement, if one ran before: a new address under the same name).
        `env` overrides the container's: only to shorten one of the scripts' waits for a test. `name`:
        the pod's, where an API server named it (node.py)."""
        return self._run(self._sandbox(index, name), env=env or {})

    def _sandbox(self, index: int, name: str | None = None) -> Sandbox:
        hostname = self.hostname(index)
        name = name or f"{hostname}-{secrets.token_hex(3)}"
        directory = self.tmp / "pods" / name
        directory.mkdir(parents=True)
        namespace, address = self.network.attach(name, hostname, self.fqdn(index))
        return Sandbox(index, name, hostname, directory, namespace, address)

    def _run(self, sandbox: Sandbox, gate: Path | None = None, env: dict[str, str] | None = None) -> Pod:
        """The containers of `sandbox`, started at once, or when `gate`'s lock is released: the native
        sidecars of the MiniCluster's image first, then the Flux container."""
        sidecars = [self._start(sandbox, container, gate, env or {}) for container in self.sidecars]
        main = self._start(sandbox, self.container, gate, env or {})
        pod = Pod(sandbox.name, sandbox.hostname, main, self.container["readinessProbe"], sidecars)
        self.pods.append(pod)
        # The Flux container's end ends the pod: its sidecars are stopped, its name leaves the Service.
        threading.Thread(target=self._reap, args=(sandbox.name, pod), daemon=True).start()
        pod.pid  # noqa: B018 -- started: PID 1 exists (or the pod failed, and says why)
        return pod

    @property
    def sidecars(self) -> list[Manifest]:
        """The native sidecars this machine can run: those of the MiniCluster's own image."""
        return [c for c in self.pod_spec.get("initContainers", [])
                if c.get("restartPolicy") == "Always" and c["image"] == self.spec.image]  # fmt: skip

    def _start(self, sandbox: Sandbox, container: Manifest, gate: Path | None, env: dict[str, str]) -> Container:
        """One container of the pod. `env` overrides its own: only to shorten one of the scripts' waits."""
        fields = {
            "HOSTNAME": sandbox.hostname, "JOB_COMPLETION_INDEX": str(sandbox.index), "metadata.name": sandbox.name,
            "metadata.namespace": self.namespace, "status.podIP": sandbox.address, "spec.nodeName": "node-0",
        }  # fmt: skip
        env = {**container_env(container, self.volumes, fields, runtime.home(self.user)), **env}
        if self.api is not None:  # as the kubelet tells every pod where the API server is
            env.update(KUBERNETES_SERVICE_HOST=self.api.host, KUBERNETES_SERVICE_PORT=str(self.api.port))
        main = container is self.container
        directory = sandbox.directory if main else sandbox.directory / container["name"]
        directory.mkdir(exist_ok=True)
        log = directory / "log"
        log.touch(mode=0o644)
        workdir = container.get("workingDir", "/")
        options = [*self._mounts(container, sandbox.directory), *self._automounted(container),
                   *runtime.user_options(self.user), *(["--gate", str(gate)] if gate else [])]  # fmt: skip
        command = ["nsenter", f"--net=/run/netns/{sandbox.namespace}", *runtime.container_command(
            sandbox.hostname, self.network.dns_dir, directory / "scratch", workdir, options,
            [*container["command"], *container.get("args", [])])]  # fmt: skip
        with log.open("ab") as output:  # appended: writes through /proc/1/fd/2 land after it, never over it
            process = subprocess.Popen(command, env=env, stdout=output, stderr=output, stdin=subprocess.DEVNULL)
        env_args = [f"{key}={value}" for key, value in env.items()]
        exec_prefix = [*runtime.setpriv(self.user), "env", "-i", "-C", workdir, *env_args]
        return Container(container["name"], process, log, exec_prefix)

    def _reap(self, name: str, pod: Pod) -> None:
        pod.main.process.wait()
        pod.stop_sidecars()
        self.network.detach(name)

    def _mounts(self, container: Manifest, pod_dir: Path) -> list[str]:
        volumes = {volume["name"]: volume for volume in self.pod_spec["volumes"]}
        args = []
        for mount in container.get("volumeMounts", []):
            volume = volumes[mount["name"]]
            if any("serviceAccountToken" in part for part in volume.get("projected", {}).get("sources", [])):
                source = self._account_dir()  # a projected token, as Kubernetes' automount projects it
            else:
                source = self.volumes.source(volume, pod_dir)
            if "subPath" in mount:
                source = source / mount["subPath"]
            args += ["--mount", str(source), mount["mountPath"], "ro" if mount.get("readOnly") else "rw"]
        return args

    def pod(self, index: int) -> Pod:
        """The newest pod of `index`."""
        return [pod for pod in self.pods if pod.hostname == self.hostname(index)][-1]

    def scale(self, size: int) -> None:
        """What follows resize.sh in a resize (cluster/scale.py): the scale ConfigMap says the new size,
        then the Job does, and the Job controller has the pods beyond it stopped (highest first) or
        creates those up to it."""
        data = sizing.scale_files(size, self.spec.min_size, self.spec.largest_size)
        self.update("ConfigMap", self.scale_config, data)
        current, self.job["spec"]["parallelism"] = self.job["spec"]["parallelism"], size
        self.job["spec"]["completions"] = size
        for index in reversed(range(size, current)):
            self.pod(index).terminate()
        for index in range(current, size):
            self.start(index)

    @contextlib.contextmanager
    def cut_off(self, index: int) -> Iterator[Pod]:
        """The newest pod of `index` without its network inside the block (network.py: cut), then back."""
        pod = self.pod(index)
        self.network.cut(pod.name)
        try:
            yield pod
        finally:
            self.network.restore(pod.name)

    def claim(self, name: str) -> Path:
        """Where the claim `name` keeps its files on this machine (it outlives the pods)."""
        return self.volumes.root / "claims" / name

    def update(self, kind: str, name: str, data: dict[str, str]) -> None:
        self.volumes.update(kind, name, data)

    def close(self) -> None:
        if self.api is not None:
            self.api.stop()
        end_all(self.pods)
        self.network.close()
