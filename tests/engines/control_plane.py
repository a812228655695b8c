"""A real Kubernetes control plane on this machine's loopback, for the tests marked realengine: etcd,
kube-apiserver, kube-controller-manager and kube-scheduler as tests/engines/install.sh built them.

The API server runs with RBAC, its default admission plugins (Pod Security and ValidatingAdmissionPolicy
among them), service account tokens signed by a key of its own (the TokenRequest API), and an admin
token for the tests' own client. The controller manager runs the Job, garbage collector, namespace and
service account controllers, and publishes the cluster's CA in every namespace (kube-root-ca.crt). The
scheduler binds pods to the nodes that register (the test kubelet's, tests/kubelet/node.py).
Every process is stopped, and its files removed, by `stop`, whatever the tests did.

`.ci/run` starts one for the whole run (`python3 tests/engines/control_plane.py DIR`, until SIGTERM) and
tells the tests where it is (MC_CONTROL_PLANE=DIR); a local run without it starts its own. Standard
library only: it runs before the venv exists.
"""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

try:
    from tests.engines.versions import KUBERNETES_BIN, STREAMING_BIN, not_built
except ModuleNotFoundError:  # run as a script (.ci/run), where its own folder is on the path
    from versions import KUBERNETES_BIN, STREAMING_BIN, not_built  # type: ignore[no-redef,import-not-found]

SERVICE_RANGE = "10.96.0.0/16"
"""The Services' virtual addresses: data in the API server only, never a destination of any packet here."""
CONTROLLERS = "job-controller,garbage-collector-controller,namespace-controller,serviceaccount-controller," \
    "root-ca-certificate-publisher-controller,endpointslice-controller,endpoints-controller," \
    "deployment-controller,replicaset-controller,pod-garbage-collector-controller"  # fmt: skip
"""endpointslice-controller: the real node's DNS (CoreDNS) serves a headless Service's names from them.
endpoints-controller: as in every cluster (the v1 Endpoints API is deprecated, still served and kept):
pulumi-kubernetes awaits a Service with a selector through it, and without it that await lasts until
its timeout (10 min). deployment- and replicaset-controller: the keeper's Deployment (keeper.enabled)
makes its pod. pod-garbage-collector-controller: as in every cluster, it deletes the pods of a Node that
no longer exists (after 40 s): a test kubelet's Node is deleted when its test ends, and without it the
pods bound there stayed Terminating for good, and so did their namespaces, which the namespace
controller went on retrying (discovery, a GET, a deletecollection and lists each time) to the run's end:
2.4 rounds a second after the real-engine tier."""
START_TIMEOUT = 60
ENGINES_BUILT = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
SERVICE_HOST = "10.96.0.1"
"""The `kubernetes` Service's address (the first of SERVICE_RANGE): where pods reach the API server,
through the test kubelet's relay inside the pod network (tests/kubelet/node.py)."""


def missing() -> str | None:
    """Why the control plane (and the test kubelet's streaming server beside it) cannot start here."""
    wanted = [KUBERNETES_BIN / name for name in ENGINES_BUILT] + [STREAMING_BIN / "kubelet-streaming"]
    return not_built("the real Kubernetes control plane", wanted)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


STATE = "control-plane.json"
"""In the control plane's directory: where it listens, and the admin's kubeconfig and CA."""


class ControlPlane:
    """etcd, kube-apiserver and kube-controller-manager; `kubeconfig` is the admin's."""

    def __init__(self, directory: Path, start: bool = True) -> None:
        self.directory = directory
        self.processes: list[subprocess.Popen[bytes]] = []
        if not start:  # one that runs already (attach)
            state = json.loads((directory / STATE).read_text())
            self.port, self.admin_token = state["port"], state["admin_token"]
            self.url, self.ca, self.kubeconfig = state["url"], Path(state["ca"]), Path(state["kubeconfig"])
            return
        directory.mkdir(parents=True, exist_ok=True)
        self.admin_token = secrets.token_urlsafe(32)
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.ca = self._certificates()
        try:
            self._etcd()
            self._api_server()
            self.kubeconfig = self._kubeconfig()
            self._controller_manager()
            self._scheduler()
        except BaseException:
            self.stop()
            raise
        state = {"port": self.port, "admin_token": self.admin_token, "url": self.url, "ca": str(self.ca),
                 "kubeconfig": str(self.kubeconfig)}  # fmt: skip
        staged = directory / f".{STATE}"
        staged.write_text(json.dumps(state))
        staged.replace(directory / STATE)  # whoever waits for it never reads half of it

    @classmethod
    def attach(cls, directory: Path) -> ControlPlane:
        """The control plane that runs from `directory` (started by `.ci/run`); `stop` leaves it running."""
        return cls(directory, start=False)

    def _certificates(self) -> Path:
        """A CA, the API server's serving certificate (127.0.0.1) signed by it, and the key that signs
        service account tokens."""
        d = self.directory
        key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl("req", "-x509", *key, "-keyout", d / "ca.key", "-out", d / "ca.crt", "-days", "2",
                 "-subj", "/CN=minicluster-test-ca")  # fmt: skip
        _openssl("req", "-new", *key, "-keyout", d / "server.key", "-out", d / "server.csr",
                 "-subj", "/CN=kube-apiserver")  # fmt: skip
        (d / "server.ext").write_text(
            f"subjectAltName=IP:127.0.0.1,IP:{SERVICE_HOST},DNS:kubernetes,DNS:kubernetes.default,"
            "DNS:kubernetes.default.svc\n"
        )
        _openssl("x509", "-req", "-in", d / "server.csr", "-CA", d / "ca.crt", "-CAkey", d / "ca.key",
                 "-CAcreateserial", "-out", d / "server.crt", "-days", "2", "-extfile", d / "server.ext")  # fmt: skip
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", d / "service-accounts.key")
        # How the API server proves itself to a real kubelet (logs, exec): a client certificate of the CA
        # the kubelet trusts, in the group that may do anything, as kubeadm gives it.
        _openssl("req", "-new", *key, "-keyout", d / "kubelet-client.key", "-out", d / "kubelet-client.csr",
                 "-subj", "/O=system:masters/CN=kube-apiserver-kubelet-client")  # fmt: skip
        _openssl("x509", "-req", "-in", d / "kubelet-client.csr", "-CA", d / "ca.crt", "-CAkey", d / "ca.key",
                 "-CAcreateserial", "-out", d / "kubelet-client.crt", "-days", "2")  # fmt: skip
        return d / "ca.crt"

    def _start(self, name: str, *argv: str) -> None:
        log = (self.directory / f"{name}.log").open("ab")
        self.processes.append(subprocess.Popen([str(KUBERNETES_BIN / name), *argv], stdout=log, stderr=log,
                                               stdin=subprocess.DEVNULL, start_new_session=True))  # fmt: skip

    def _etcd(self) -> None:
        client, peer = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
        self.etcd_url = client
        self._start("etcd", "--name=test", f"--data-dir={self.directory / 'etcd'}", f"--listen-client-urls={client}",
                    f"--advertise-client-urls={client}", f"--listen-peer-urls={peer}",
                    f"--initial-advertise-peer-urls={peer}", f"--initial-cluster=test={peer}",
                    "--unsafe-no-fsync", "--log-level=warn")  # fmt: skip

    def _api_server(self) -> None:
        d = self.directory
        (d / "tokens.csv").write_text(f'{self.admin_token},admin,admin-uid,"system:masters"\n')
        self._start(
            "kube-apiserver", f"--etcd-servers={self.etcd_url}", "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none", f"--secure-port={self.port}",
            f"--cert-dir={d / 'certs'}",
            f"--tls-cert-file={d / 'server.crt'}", f"--tls-private-key-file={d / 'server.key'}",
            f"--client-ca-file={d / 'ca.crt'}", f"--token-auth-file={d / 'tokens.csv'}",
            f"--kubelet-client-certificate={d / 'kubelet-client.crt'}",
            f"--kubelet-client-key={d / 'kubelet-client.key'}",
            "--authorization-mode=RBAC", f"--service-cluster-ip-range={SERVICE_RANGE}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={d / 'service-accounts.key'}",
            f"--service-account-signing-key-file={d / 'service-accounts.key'}",
            "--profiling=false", "--v=1",
            # Logs and exec reach a kubelet at its Node's address: the test kubelet's is loopback.
            "--kubelet-preferred-address-types=InternalIP",
        )  # fmt: skip
        self._wait_ready()

    def _wait_ready(self) -> None:
        tls = ssl.create_default_context(cafile=str(self.ca))
        asked = urllib.request.Request(f"{self.url}/readyz", headers={"Authorization": f"Bearer {self.admin_token}"})
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(asked, timeout=2, context=tls) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline or any(process.poll() is not None for process in self.processes):
                raise RuntimeError(f"kube-apiserver did not become ready:\n{self.log('kube-apiserver')[-3000:]}")
            time.sleep(0.2)

    def _kubeconfig(self) -> Path:
        path = self.directory / "kubeconfig"
        document = {
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": self.url, "certificate-authority": str(self.ca)}}],
            "users": [{"name": "admin", "user": {"token": self.admin_token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin", "namespace": "default"}}],
        }  # fmt: skip
        path.write_text(json.dumps(document, indent=1))  # JSON is YAML too
        return path

    def _controller_manager(self) -> None:
        d = self.directory
        self._start(
            "kube-controller-manager", f"--kubeconfig={self.kubeconfig}", f"--controllers={CONTROLLERS}",
            "--leader-elect=false", f"--root-ca-file={d / 'ca.crt'}", "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}", f"--cert-dir={d / 'controller-manager-certs'}",
            f"--service-account-private-key-file={d / 'service-accounts.key'}", "--v=1",
        )  # fmt: skip

    def _scheduler(self) -> None:
        self._start(
            "kube-scheduler", f"--kubeconfig={self.kubeconfig}", f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}", "--leader-elect=false", "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}", f"--cert-dir={self.directory / 'scheduler-certs'}", "--v=1",
        )  # fmt: skip

    def log(self, name: str) -> str:
        path = self.directory / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """Stops what this object started (nothing, for one it attached to), and removes etcd's data."""
        if not self.processes:
            return
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        shutil.rmtree(self.directory / "etcd", ignore_errors=True)


def _openssl(*args: object) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=30)


def serve(directory: Path) -> None:
    """Start a control plane in `directory`, say so on stdout, and run it until SIGTERM or SIGINT."""
    plane = ControlPlane(directory)
    stopping: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda number, _frame: stopping.append(number))
    print(f"control plane at {plane.url} (kubeconfig {plane.kubeconfig})", flush=True)
    try:
        while not stopping and all(process.poll() is None for process in plane.processes):
            time.sleep(0.5)
    finally:
        plane.stop()
    if not stopping:
        sys.exit(f"a process of the control plane ended:\n{plane.log('kube-apiserver')[-2000:]}")


if __name__ == "__main__":
    if len(sys.argv) != 2 or missing():
        sys.exit(missing() or "usage: control_plane.py DIRECTORY")
    serve(Path(sys.argv[1]))
