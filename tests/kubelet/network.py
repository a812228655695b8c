"""The pod network of the test kubelet: a bridge in a network namespace of its own (the "switch"), and
for each pod a network namespace with `eth0` on that bridge and an address that exists only there.
Nothing is routed off the machine, and nothing outside these namespaces is ever addressed.

Names resolve as the headless Service's DNS records do (`publishNotReadyAddresses`): a pod's name
resolves to its address from the moment it has one, ready or not, and stops resolving once the pod
has ended. A replacement pod gets a new address under the same name. Every pod reads one hosts file
(`hosts` in `dns_dir`, which container.sh links /etc/hosts to), replaced in one rename at each
change, so that a lookup never reads it half-written.
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import itertools
import os
import socket
import subprocess
import threading
from pathlib import Path

CLONE_NEWNET = 0x40000000
PREFIX = "mck"
"""Every namespace this harness makes is named mck<kind>-<pid of the test process>-<n>."""
SUBNET = ipaddress.ip_network("10.244.0.0/16")
LOCALHOST = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
_serial = itertools.count()


def ip(*args: str, namespace: str | None = None) -> None:
    command = ["ip", *(["-n", namespace] if namespace else []), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()}")


def remove_stale_namespaces() -> None:
    """Namespaces left by a test process that died before it could remove them (SIGKILL, a crash)."""
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    for line in listing.splitlines():
        name = line.split()[0] if line.split() else ""
        parts = name.split("-")
        if not name.startswith(PREFIX) or len(parts) < 3 or not parts[1].isdigit():
            continue
        if not Path(f"/proc/{parts[1]}").exists():
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)


class PodNetwork:
    """One cluster's network: `attach` gives a pod its namespace, address and name; `detach` ends them."""

    def __init__(self, dns_dir: Path) -> None:
        remove_stale_namespaces()
        self.tag = f"{os.getpid()}-{next(_serial)}"
        self.switch = f"{PREFIX}sw-{self.tag}"
        self.dns_dir = dns_dir
        dns_dir.mkdir(parents=True)
        dns_dir.chmod(0o755)
        self.records: dict[str, tuple[str, str, str]] = {}  # pod -> (address, fqdn, hostname)
        self.namespaces: dict[str, str] = {}  # pod -> its network namespace
        self._addresses = SUBNET.hosts()
        self.gateway = str(next(self._addresses))  # .1: the bridge's own, once it is given it (serve_pods)
        self._veths = itertools.count()
        self._lock = threading.Lock()
        self.routes: list[str] = []
        """Addresses beyond the pod network that each pod reaches through the gateway (the API server's
        Service address, node.py): they are the switch namespace's own, never the machine's."""
        self._publish()
        ip("netns", "add", self.switch)
        ip("link", "add", "br0", "type", "bridge", namespace=self.switch)
        ip("link", "set", "br0", "up", namespace=self.switch)

    def attach(self, pod: str, hostname: str, fqdn: str) -> tuple[str, str]:
        """Pod `pod`'s network namespace and address, its name resolving to it from now on."""
        with self._lock:
            namespace, address = f"{PREFIX}pod-{self.tag}-{next(self._veths)}", str(next(self._addresses))
            veth = f"v{namespace.rsplit('-', 1)[1]}"  # its end on the bridge; the pod's end is eth0
            ip("netns", "add", namespace)
            self.namespaces[pod] = namespace
            ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", namespace, namespace=self.switch)
            ip("link", "set", veth, "master", "br0", "up", namespace=self.switch)
            ip("addr", "add", f"{address}/{SUBNET.prefixlen}", "dev", "eth0", namespace=namespace)
            ip("link", "set", "eth0", "up", namespace=namespace)
            ip("link", "set", "lo", "up", namespace=namespace)
            self._route(namespace)
            self.records[pod] = (address, fqdn, hostname)
            self._publish()
        return namespace, address

    def detach(self, pod: str) -> None:
        """The pod has ended: its name no longer resolves, and its namespace (and veth) are gone."""
        with self._lock:
            if self.records.pop(pod, None) is not None:
                self._publish()
            namespace = self.namespaces.pop(pod, None)
        if namespace is not None:
            with contextlib.suppress(subprocess.SubprocessError):
                subprocess.run(["ip", "netns", "delete", namespace], capture_output=True, timeout=10)

    def cut(self, pod: str) -> None:
        """The pod's link goes down, as when its node's network fails: nothing it sends leaves, and
        what is sent to it is dropped on the bridge. Its name still resolves."""
        ip("link", "set", "eth0", "down", namespace=self.namespaces[pod])

    def restore(self, pod: str) -> None:
        """The link back up, with the routes it lost when it went down (a pod that has ended has none)."""
        with self._lock:  # held throughout: detach cannot remove the namespace meanwhile
            namespace = self.namespaces.get(pod)
            if namespace is None:
                return
            ip("link", "set", "eth0", "up", namespace=namespace)
            self._route(namespace)

    def _route(self, namespace: str) -> None:
        """The pod's way to the addresses beyond the pod network (self.routes), through the gateway."""
        for route in self.routes:
            ip("route", "replace", route, "via", self.gateway, "dev", "eth0", namespace=namespace)

    def _publish(self) -> None:
        lines = "".join(f"{address}\t{fqdn}\t{host}\n" for address, fqdn, host in self.records.values())
        staged = self.dns_dir / ".hosts.new"
        staged.write_text(LOCALHOST + lines)
        staged.chmod(0o644)
        staged.replace(self.dns_dir / "hosts")

    def close(self) -> None:
        for pod in list(self.namespaces):
            self.detach(pod)
        with contextlib.suppress(subprocess.SubprocessError):
            subprocess.run(["ip", "netns", "delete", self.switch], capture_output=True, timeout=10)


def listening(namespace: str, host: str, port: int = 0) -> socket.socket:
    """A socket listening in network namespace `namespace`: made by a thread that enters it (setns
    changes the calling thread's namespace only), and which then ends."""
    made: list[socket.socket | BaseException] = []

    def make() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            with open(f"/run/netns/{namespace}") as netns:
                if libc.setns(netns.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns into {namespace}")
            listener = socket.socket()
            listener.bind((host, port))
            listener.listen(64)
            made.append(listener)
        except BaseException as error:
            made.append(error)

    thread = threading.Thread(target=make)
    thread.start()
    thread.join()
    if isinstance(made[0], BaseException):
        raise made[0]
    return made[0]
