"""A real Kubernetes node on this machine, beside the control plane (tests/engines/control_plane.py):
containerd and runc run the pods' containers from the images of tests/engines/images.py, the kubelet
registers the Node with the machine's real capacity, the CNI bridge plugin puts the pods on one network,
and CoreDNS answers the cluster's names (Services, and pods under their headless Service). The
`kubernetes` Service's address reaches the API server through a relay (node_host.py).

The control plane runs no node lifecycle controller (it would mark the test kubelet's Nodes, which send
no heartbeats, unreachable): this node lifts the not-ready taint itself once the kubelet says Ready.

`.ci/run` starts one for the whole run (`python3 tests/engines/node.py DIR`, until SIGTERM, after the
control plane) and tells the tests where it is (MC_NODE=DIR). It needs root, and there is one per
machine: the kubelet and containerd write fixed paths and change kernel settings, all undone at `stop`
(node_host.py). Standard library only: it runs before the venv exists.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if not __package__:  # run as a script (.ci/run): the checkout's root on the path, as under pytest
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.engines import images, node_files
from tests.engines.control_plane import SERVICE_HOST, STATE, ControlPlane
from tests.engines.node_host import HostChanges, end_orphans, end_pods, kill_shims, unmount_under
from tests.engines.registry import Registry
from tests.engines.versions import NODE_BIN, not_built

PROGRAMS = ("containerd", "containerd-shim-runc-v2", "ctr", "runc", "kubelet", "coredns", "pause", "cni/bridge")
START_TIMEOUT = 120
KUBELET_PORT = 10250
NODE_STATE = "node.json"


def missing() -> str | None:
    """Why the real node cannot start here."""
    if os.geteuid() != 0:
        return "the real node needs root (containerd, runc and the kubelet)"
    return not_built("the real node", [NODE_BIN / name for name in PROGRAMS])


class RealNode:
    """The node's processes (containerd, CoreDNS, the kubelet) and its changes to the machine."""

    def __init__(self, directory: Path, plane: ControlPlane) -> None:
        self.directory, self.plane = directory, plane
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        end_orphans()  # before anything of this node's: a refusal here must leave the running node alone
        self.host = HostChanges()
        self.registry: Registry | None = None
        directory.mkdir(parents=True, exist_ok=True)
        self.socket = directory / "containerd" / "containerd.sock"
        try:
            self.host.claim()
            self._files()
            self.host.add_address(node_files.NODE_ADDRESS)
            self.host.add_address(SERVICE_HOST)
            self.host.relay(SERVICE_HOST, 443, ("127.0.0.1", plane.port))
            self.host.share_netns_dir()
            self._containerd()
            self._images()
            self._start("coredns", "-conf", str(directory / "Corefile"))
            self._kubelet()
            self._ready()
        except BaseException:
            self.stop()
            raise
        state = {"name": node_files.NODE_NAME, "address": node_files.NODE_ADDRESS}
        (directory / NODE_STATE).write_text(json.dumps(state))

    def _files(self) -> None:
        d = self.directory
        (d / "cni").mkdir(exist_ok=True)
        (d / "containerd.toml").write_text(node_files.containerd_config(d))
        (d / "cni" / "10-minicluster.conflist").write_text(node_files.cni_config(d))
        (d / "kubelet.json").write_text(node_files.kubelet_config(d, self.plane.ca, KUBELET_PORT))
        (d / "Corefile").write_text(node_files.corefile(self.plane.kubeconfig))
        (d / "resolv.conf").write_text(f"search {node_files.CLUSTER_DOMAIN}\n")  # the machine's own names: none

    def _start(self, name: str, *argv: str) -> None:
        log = (self.directory / f"{name}.log").open("ab")
        env = {**os.environ, "PATH": f"{NODE_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        self.processes[name] = subprocess.Popen(
            [str(NODE_BIN / name), *argv], stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,
        )  # fmt: skip

    def ctr(self, *argv: str, timeout: float = 300, stdin: Any = None, check: bool = True) -> str:
        """`ctr` on this node's containerd, in the namespace of the CRI (the kubelet's)."""
        command = [str(NODE_BIN / "ctr"), "--address", str(self.socket), "--namespace", "k8s.io", *argv]
        done = subprocess.run(command, stdin=stdin, check=check, capture_output=True, text=True, timeout=timeout)
        return done.stdout

    def _containerd(self) -> None:
        self._start("containerd", "--config", str(self.directory / "containerd.toml"))
        self._until("containerd answers", lambda: self.socket.exists() and _succeeds(self.ctr, "version"))

    def _images(self) -> None:
        """The images, imported into containerd under their names and served by the node's registry."""
        layout = self.directory / "images"
        names = images.build(layout)
        for registry in {name.split("/", 1)[0] for name in names}:
            (self.directory / "registries" / registry).mkdir(parents=True, exist_ok=True)
            (self.directory / "registries" / registry / "hosts.toml").write_text(node_files.registry_hosts(registry))
        self.registry = Registry(layout, node_files.NODE_ADDRESS, node_files.REGISTRY_PORT)
        print(f"importing the node's images: {', '.join(names)}", flush=True)
        # The layout streamed as a tar by Python, not GNU tar: the Debian root's blob is a hard link to
        # the cached file, and GNU tar fails ("file changed as we read it") when anything links or
        # unlinks that file meanwhile, which changes its ctime: another node's start or cleanup did.
        read_end, write_end = os.pipe()
        with ThreadPoolExecutor(max_workers=1) as writer:
            written = writer.submit(images.tar_stream, layout, write_end)
            try:
                self.ctr("images", "import", "--all-platforms", "-", stdin=read_end)
            finally:
                os.close(read_end)  # a writer still writing gets a closed pipe, and ends
                # The writer's own failure says why the stream was cut short; ctr only says that it was.
                if (failed := written.exception()) is not None:
                    raise RuntimeError("streaming the node's images to `ctr images import` failed") from failed

    def _kubelet(self) -> None:
        d = self.directory
        self._start(
            "kubelet", f"--config={d / 'kubelet.json'}", f"--kubeconfig={self.plane.kubeconfig}",
            f"--root-dir={d / 'kubelet'}", f"--cert-dir={d / 'kubelet-pki'}",
            f"--hostname-override={node_files.NODE_NAME}", f"--node-ip={node_files.NODE_ADDRESS}",
        )  # fmt: skip

    def _ready(self) -> None:
        """Until the Node says Ready; then lift the not-ready taint, as the node lifecycle controller does."""
        path = f"/api/v1/nodes/{node_files.NODE_NAME}"
        self._until("the kubelet's Node is Ready", lambda: _ready(self._api("GET", path, missing={})))
        node = self._api("GET", path)
        taints = [t for t in node["spec"].get("taints") or [] if t["key"] != "node.kubernetes.io/not-ready"]
        patch = {"spec": {"taints": taints or None}}
        self._api("PATCH", path, patch, "application/merge-patch+json")

    def _api(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json", missing: Any = None
    ) -> Any:
        """The API server's answer (as the admin); `missing` for a 404, if given."""
        tls = ssl.create_default_context(cafile=str(self.plane.ca))
        headers = {"Authorization": f"Bearer {self.plane.admin_token}", "Content-Type": content_type}
        data = None if body is None else json.dumps(body).encode()
        asked = urllib.request.Request(f"{self.plane.url}{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(asked, timeout=10, context=tls) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as error:
            if error.code == 404 and missing is not None:
                return missing
            raise

    def _until(self, what: str, done: Any) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not done():
            ended = [name for name, process in self.processes.items() if process.poll() is not None]
            if ended or time.monotonic() > deadline:
                logs = "".join(f"\n== {name}\n{self.log(name)[-3000:]}" for name in self.processes)
                raise RuntimeError(f"the real node failed: {what}, not yet ({', '.join(ended)} ended){logs}")
            time.sleep(0.2)

    def log(self, name: str) -> str:
        path = self.directory / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> list[str]:
        """Stop the node and its pods, remove the Node, and leave the machine as the node found it;
        returns what it could not undo (nothing, when all went well)."""
        for name in ("kubelet", "coredns"):
            _terminate(self.processes.get(name))
        if "containerd" in self.processes:
            for task in _lines(self.ctr, "tasks", "list", "--quiet"):
                self.ctr("tasks", "kill", "--signal", "SIGKILL", task, check=False)
            _terminate(self.processes["containerd"])
        kill_shims(self.socket)
        end_pods()  # a container its shim's end did not take with it
        if self.registry is not None:
            self.registry.close()
        subprocess.run(["ip", "link", "delete", node_files.BRIDGE], capture_output=True)
        unmount_under(self.directory)
        self.host.restore()
        with contextlib.suppress(urllib.error.URLError, OSError):  # the control plane may be gone already
            self._api("DELETE", f"/api/v1/nodes/{node_files.NODE_NAME}")
        return self.host.left_behind()


def _ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _succeeds(call: Any, *argv: str) -> bool:
    try:
        call(*argv, timeout=5)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return False
    return True


def _lines(call: Any, *argv: str) -> list[str]:
    try:
        return [line.strip() for line in call(*argv, timeout=20).splitlines() if line.strip()]
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return []


def _terminate(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def serve(directory: Path, plane_directory: Path) -> None:
    """Start a node in `directory` for the control plane in `plane_directory`, and run it until SIGTERM."""
    plane = ControlPlane.attach(plane_directory)
    stopping: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda number, _frame: stopping.append(number))
    node = RealNode(directory, plane)
    print(f"real node {node_files.NODE_NAME} at {node_files.NODE_ADDRESS} is Ready", flush=True)
    left: list[str] = []
    try:
        while not stopping and all(process.poll() is None for process in node.processes.values()):
            time.sleep(0.5)
    finally:
        left = node.stop()
    if left:  # .ci/run fails on this: the machine must be as the node found it
        sys.exit(f"the real node stopped, but left behind: {'; '.join(left)}")
    print("the real node stopped, and the machine is as it found it", flush=True)
    if not stopping:
        ended = [name for name, process in node.processes.items() if process.poll() is not None]
        sys.exit(f"a process of the real node ended ({', '.join(ended)}):\n{node.log(ended[0])[-2000:]}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or missing() or not (Path(sys.argv[2]) / STATE).exists():
        sys.exit(missing() or "usage: node.py DIRECTORY CONTROL_PLANE_DIRECTORY (a running control plane's)")
    serve(Path(sys.argv[1]), Path(sys.argv[2]))
